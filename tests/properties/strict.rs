//! A strict reader of canonical JSON, independent of serde_json: it keeps
//! object keys in text order (to check their order) and numbers as text (to
//! compare them exactly), and accepts only the canonical form (no
//! whitespace, only the escapes canonical JSON writes).

use serde_json::{Map, Number, Value};

/// A JSON value as it appeared in the text.
#[derive(Debug)]
pub(crate) enum Parsed {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Parsed>),
    Object(Vec<(String, Parsed)>),
}

impl Parsed {
    /// The value, numbers read exactly (integers as integers when they
    /// fit, everything else by the correctly rounding `f64` parser).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Parsed::Null => Value::Null,
            Parsed::Bool(b) => Value::Bool(*b),
            Parsed::Number(text) => {
                if let Ok(n) = text.parse::<u64>() {
                    Value::from(n)
                } else if let Ok(n) = text.parse::<i64>() {
                    Value::from(n)
                } else {
                    Number::from_f64(text.parse().unwrap()).map_or(Value::Null, Value::Number)
                }
            }
            Parsed::String(text) => Value::String(text.clone()),
            Parsed::Array(items) => Value::Array(items.iter().map(Parsed::to_value).collect()),
            Parsed::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(key, value)| (key.clone(), value.to_value()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

/// Reads one canonical JSON text.
pub(crate) fn parse(text: &str) -> Result<Parsed, String> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        at: 0,
    };
    let value = reader.value()?;
    if reader.at != reader.bytes.len() {
        return Err(format!("trailing text at {}", reader.at));
    }
    Ok(value)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn expect(&mut self, token: &str) -> Result<(), String> {
        if self.bytes[self.at..].starts_with(token.as_bytes()) {
            self.at += token.len();
            Ok(())
        } else {
            Err(format!("expected {token} at {}", self.at))
        }
    }

    fn value(&mut self) -> Result<Parsed, String> {
        match self.peek() {
            Some(b'n') => self.expect("null").map(|()| Parsed::Null),
            Some(b't') => self.expect("true").map(|()| Parsed::Bool(true)),
            Some(b'f') => self.expect("false").map(|()| Parsed::Bool(false)),
            Some(b'"') => self.string().map(Parsed::String),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if self.peek() == Some(b']') {
                    self.at += 1;
                    return Ok(Parsed::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Parsed::Array(items));
                        }
                        _ => return Err(format!("bad array at {}", self.at)),
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                let mut entries = Vec::new();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                    return Ok(Parsed::Object(entries));
                }
                loop {
                    let key = self.string()?;
                    self.expect(":")?;
                    entries.push((key, self.value()?));
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Parsed::Object(entries));
                        }
                        _ => return Err(format!("bad object at {}", self.at)),
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                while let Some(b'-' | b'+' | b'.' | b'e' | b'0'..=b'9') = self.peek() {
                    self.at += 1;
                }
                let text = std::str::from_utf8(&self.bytes[start..self.at]).unwrap();
                if text.parse::<f64>().is_err() || text == "-0" {
                    return Err(format!("bad number {text}"));
                }
                Ok(Parsed::Number(text.to_owned()))
            }
            _ => Err(format!("unexpected byte at {}", self.at)),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect("\"")?;
        let mut out = Vec::new();
        loop {
            let Some(byte) = self.peek() else {
                return Err("unterminated string".to_owned());
            };
            self.at += 1;
            match byte {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'\\' => {
                    let escape = self.peek().ok_or("dangling escape")?;
                    self.at += 1;
                    match escape {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'u' => {
                            let hex = std::str::from_utf8(&self.bytes[self.at..self.at + 4])
                                .map_err(|e| e.to_string())?;
                            let code = u8::from_str_radix(hex, 16).map_err(|e| e.to_string())?;
                            // Only controls without a short escape are written this way.
                            if code >= 0x20 || [0x08, 0x09, 0x0a, 0x0c, 0x0d].contains(&code) {
                                return Err(format!("non-canonical escape \\u{hex}"));
                            }
                            out.push(code);
                            self.at += 4;
                        }
                        _ => return Err(format!("bad escape at {}", self.at)),
                    }
                }
                0x00..=0x1f => return Err(format!("raw control byte at {}", self.at)),
                other => out.push(other),
            }
        }
    }
}
