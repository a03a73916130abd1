//! What a message rmcp could not read was: read no further than its top
//! level (no depth limit, no recursion), for the id a reply carries back
//! and the JSON-RPC error that names what is wrong. The line transport and
//! the HTTP gate answer such a message alike.

use serde_json::Value;

/// What a line rmcp could not read was, read no further than its top
/// level.
pub(super) enum Unreadable {
    /// A request whose id reads as the client wrote it, and what is wrong
    /// with it.
    Request { id: Value, fault: Fault },
    /// A notification or a response: nothing to answer.
    Notification,
    /// A JSON array: a batch, which MCP does not take.
    Batch,
    /// Not JSON by its grammar (or not UTF-8): the parse error.
    NotJson,
}

/// What is wrong with a request rmcp could not read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fault {
    /// JSON `serde_json` cannot read (`-32602`).
    Unreadable,
    /// Sound JSON-RPC around params the method does not take (`-32602`).
    Params,
    /// Sound JSON-RPC naming a method no MCP server takes (`-32601`), with
    /// params rmcp could not read either: the method is what is wrong.
    Method,
    /// No JSON-RPC 2.0 request: the version, the method or no method at
    /// all (`-32600`).
    Envelope,
    /// An integer id beyond a signed 64-bit integer, which rmcp cannot
    /// carry (`-32600`).
    IdOutOfRange,
}

/// Reads the top level of a line rmcp could not read: its `id`, `method`,
/// `jsonrpc` and whether it answers, each value skipped by its brackets and
/// quotes (no depth limit, no recursion: a value nested past
/// `serde_json`'s limit still has its id found).
pub(super) fn unreadable(line: &[u8]) -> Unreadable {
    let Ok(text) = std::str::from_utf8(line) else {
        return Unreadable::NotJson;
    };
    let text = text.trim_matches(|c: char| c.is_ascii_whitespace());
    // Not JSON by its grammar (what `serde_json` refuses beyond it — a lone
    // surrogate, a number past `f64`, nesting past 128 — is still JSON).
    if !is_json(text) {
        return Unreadable::NotJson;
    }
    if text.starts_with('[') {
        return Unreadable::Batch;
    }
    let Some(top) = top_level(text) else {
        // JSON, but no object (`42`, `"x"`): no request, not a parse error.
        return Unreadable::Request {
            id: Value::Null,
            fault: Fault::Envelope,
        };
    };
    // An answer (however malformed) is not answered.
    if top.answer && top.method.is_none() {
        return Unreadable::Notification;
    }
    // A member named twice: which one the client meant is ambiguous, so
    // the message is no request; its id is echoed only when every copy
    // agrees.
    if top.duplicate {
        let id = top
            .id
            .filter(|_| !top.ids_disagree)
            .and_then(faithful_id)
            .unwrap_or(Value::Null);
        return Unreadable::Request {
            id,
            fault: Fault::Envelope,
        };
    }
    // A request, or an id with neither a method nor an answer (no
    // response either): answered under its id.
    let Some(raw) = top.id else {
        // No id: a notification (a method name) gets nothing; anything
        // else is no message at all, answered under `null`.
        if top.method.is_some_and(|method| method.starts_with('"')) && !top.answer {
            return Unreadable::Notification;
        }
        return Unreadable::Request {
            id: Value::Null,
            fault: Fault::Envelope,
        };
    };
    // Read whole, strings and numbers decoded (skipping them would not
    // see a lone surrogate).
    let json = serde_json::from_slice::<Value>(line).is_ok();
    let Some(id) = faithful_id(raw) else {
        // JSON with an id that cannot be carried back (a fraction, `null`,
        // an object, one too long): an invalid request, whose id the reply
        // cannot name.
        return Unreadable::Request {
            id: Value::Null,
            fault: Fault::Envelope,
        };
    };
    if !json {
        // What no MCP server takes is the method, whatever its params hold.
        let unknown = top
            .method
            .is_some_and(|method| method.starts_with('"') && !is_mcp_method(method));
        return Unreadable::Request {
            id,
            fault: if unknown {
                Fault::Method
            } else {
                Fault::Unreadable
            },
        };
    }
    // The envelope is sound (version "2.0", a method name, no answer, an
    // id rmcp reads): what rmcp could not read is the method's params.
    let readable_id = !id.is_number() || id.is_i64();
    let sound = top.version == Some("\"2.0\"")
        && top.method.is_some_and(|method| method.starts_with('"'))
        && !top.answer
        && readable_id;
    let fault = match top.method {
        Some(method) if sound && !is_mcp_method(method) => Fault::Method,
        _ if sound => Fault::Params,
        _ if !readable_id => Fault::IdOutOfRange,
        _ => Fault::Envelope,
    };
    Unreadable::Request { id, fault }
}

impl Fault {
    /// The JSON-RPC error code that names it.
    pub(super) fn code(&self) -> i32 {
        match self {
            Fault::Envelope | Fault::IdOutOfRange => -32600,
            Fault::Method => -32601,
            Fault::Params | Fault::Unreadable => -32602,
        }
    }

    /// What the reply says.
    pub(super) fn message(&self) -> &'static str {
        match self {
            Fault::Envelope => {
                "invalid request: not one JSON-RPC 2.0 request (\"jsonrpc\": \"2.0\", a method name, each member once)"
            }
            Fault::IdOutOfRange => {
                "invalid request: the id is an integer beyond 64 bits (signed); give the request a \
                 string id or a smaller number"
            }
            Fault::Method => "method not found",
            Fault::Params => "invalid params: the method does not take these params",
            Fault::Unreadable => {
                "this request cannot be read: a string holds a lone UTF-16 surrogate, a number is beyond \
                 64-bit floating point, a value is nested deeper than 128, or the JSON is malformed"
            }
        }
    }
}

/// Whether `method` (the raw JSON string, quotes included) names a request
/// rmcp's server reads: one of `ClientRequest`'s variants, named by rmcp's
/// own constants (rmcp reads any other name as a custom request, which no
/// handler here takes).
fn is_mcp_method(method: &str) -> bool {
    use rmcp::model::{
        CallToolRequestMethod, CancelTaskMethod, CompleteRequestMethod, ConstString,
        DiscoverRequestMethod, GetPromptRequestMethod, GetSkillRequestMethod, GetTaskMethod,
        InitializeResultMethod, ListPromptsRequestMethod, ListResourceTemplatesRequestMethod,
        ListResourcesRequestMethod, ListSkillsRequestMethod, ListToolsRequestMethod,
        PingRequestMethod, ReadResourceDirectoryRequestMethod, ReadResourceRequestMethod,
        SetLevelRequestMethod, SubscribeRequestMethod, SubscriptionsListenRequestMethod,
        UnsubscribeRequestMethod, UpdateTaskMethod,
    };
    const METHODS: [&str; 21] = [
        PingRequestMethod::VALUE,
        InitializeResultMethod::VALUE,
        DiscoverRequestMethod::VALUE,
        CompleteRequestMethod::VALUE,
        SetLevelRequestMethod::VALUE,
        GetPromptRequestMethod::VALUE,
        ListPromptsRequestMethod::VALUE,
        ListResourcesRequestMethod::VALUE,
        ListResourceTemplatesRequestMethod::VALUE,
        ReadResourceRequestMethod::VALUE,
        SubscriptionsListenRequestMethod::VALUE,
        SubscribeRequestMethod::VALUE,
        UnsubscribeRequestMethod::VALUE,
        CallToolRequestMethod::VALUE,
        ListToolsRequestMethod::VALUE,
        GetTaskMethod::VALUE,
        UpdateTaskMethod::VALUE,
        CancelTaskMethod::VALUE,
        ListSkillsRequestMethod::VALUE,
        GetSkillRequestMethod::VALUE,
        ReadResourceDirectoryRequestMethod::VALUE,
    ];
    serde_json::from_str::<String>(method).is_ok_and(|name| METHODS.contains(&name.as_str()))
}

/// What the top level of a JSON object holds.
#[derive(Default)]
struct TopLevel<'a> {
    /// The raw text of the `id` member.
    id: Option<&'a str>,
    /// The raw text of the `method` member.
    method: Option<&'a str>,
    /// The raw text of the `jsonrpc` member.
    version: Option<&'a str>,
    /// A `result` or an `error` member is there (a response).
    answer: bool,
    /// `id`, `method`, `jsonrpc`, `params`, `result` or `error` is there
    /// twice.
    duplicate: bool,
    /// `id` is there twice, with different raw values.
    ids_disagree: bool,
}

/// The top level of `text`; `None` when the text is no object.
fn top_level(text: &str) -> Option<TopLevel<'_>> {
    let bytes = text.as_bytes();
    let skip_space = |mut at: usize| {
        while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        at
    };
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let mut top = TopLevel::default();
    // Seen only to tell a member named twice.
    let (mut params, mut result, mut error) = (None, None, None);
    let mut at = skip_space(1);
    if bytes.get(at) == Some(&b'}') {
        return (at + 1 == bytes.len()).then_some(top);
    }
    loop {
        let key_end = value_end(bytes, at)?;
        let key = text.get(at..key_end)?;
        at = skip_space(key_end);
        if bytes.get(at) != Some(&b':') || !key.starts_with('"') {
            return None;
        }
        let value_start = skip_space(at + 1);
        let end = value_end(bytes, value_start)?;
        let value = text.get(value_start..end);
        // The key as JSON reads it: `"\u0069d"` is `id`.
        let decoded;
        let name = if key.contains('\\') {
            decoded = serde_json::from_str::<String>(key).ok()?;
            decoded.as_str()
        } else {
            key.get(1..key.len() - 1)?
        };
        let slot = match name {
            "id" => {
                top.ids_disagree |= top.id.is_some_and(|first| Some(first) != value);
                Some(&mut top.id)
            }
            "method" => Some(&mut top.method),
            "jsonrpc" => Some(&mut top.version),
            "params" => Some(&mut params),
            "result" => {
                top.answer = true;
                Some(&mut result)
            }
            "error" => {
                top.answer = true;
                Some(&mut error)
            }
            _ => None,
        };
        if let Some(slot) = slot {
            top.duplicate |= slot.is_some();
            *slot = value;
        }
        at = skip_space(end);
        match bytes.get(at) {
            Some(b',') => at = skip_space(at + 1),
            Some(b'}') if at + 1 == bytes.len() => return Some(top),
            _ => return None,
        }
    }
}

/// Where the JSON value starting at `at` ends: a string at its closing
/// quote, an object or array at its closing bracket (strings inside
/// skipped), anything else before the next `,`, `}`, `]` or space.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut index = at;
    while let Some(&byte) = bytes.get(index) {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => {
                    in_string = false;
                    if depth == 0 {
                        return Some(index + 1);
                    }
                }
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(index + 1);
                    }
                }
                b',' | b'}' | b']' if depth == 0 => return (index > at).then_some(index),
                _ if depth == 0 && byte.is_ascii_whitespace() => {
                    return (index > at).then_some(index);
                }
                _ => {}
            }
        }
        index += 1;
    }
    (depth == 0 && !in_string && index > at).then_some(index)
}

/// The longest id this side carries back in a reply of its own: a reply
/// owed is bounded like the replies queued behind it.
pub(super) const MAX_ECHOED_ID_BYTES: usize = 1024;

/// Whether `text` is one JSON value by the grammar of RFC 8259, at any
/// depth (its own stack, no recursion): escapes as written, numbers of any
/// size. `serde_json` refuses more (a lone surrogate, a number past `f64`,
/// nesting past 128), which is a request it cannot read, not a parse error.
fn is_json(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut open: Vec<u8> = Vec::new();
    let mut at = skip_space(bytes, 0);
    loop {
        // A value at `at`: a container opens (its first member next), or a
        // scalar ends.
        match bytes.get(at) {
            Some(&bracket @ (b'{' | b'[')) => {
                let object = bracket == b'{';
                at = skip_space(bytes, at + 1);
                if bytes.get(at) == Some(if object { &b'}' } else { &b']' }) {
                    at += 1;
                } else {
                    open.push(bracket);
                    if object {
                        let Some(value) = member(bytes, at) else {
                            return false;
                        };
                        at = value;
                    }
                    continue;
                }
            }
            Some(b'"') => match string_end(bytes, at) {
                Some(end) => at = end,
                None => return false,
            },
            Some(b'-' | b'0'..=b'9') => match number_end(bytes, at) {
                Some(end) => at = end,
                None => return false,
            },
            _ => {
                let literal = [&b"true"[..], b"false", b"null"]
                    .into_iter()
                    .find(|word| bytes.get(at..).is_some_and(|rest| rest.starts_with(word)));
                match literal {
                    Some(word) => at += word.len(),
                    None => return false,
                }
            }
        }
        // After a value: the next member, a container's close, or the end.
        loop {
            at = skip_space(bytes, at);
            match (open.last(), bytes.get(at)) {
                (None, None) => return true,
                (Some(b'{'), Some(b',')) => {
                    let Some(value) = member(bytes, skip_space(bytes, at + 1)) else {
                        return false;
                    };
                    at = value;
                    break;
                }
                (Some(b'['), Some(b',')) => {
                    at = skip_space(bytes, at + 1);
                    break;
                }
                (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']')) => {
                    open.pop();
                    at += 1;
                }
                _ => return false,
            }
        }
    }
}

/// Past JSON whitespace from `at`.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes
        .get(at)
        .is_some_and(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

/// An object member's key and colon at `at`: where its value starts.
fn member(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let colon = skip_space(bytes, string_end(bytes, at)?);
    (bytes.get(colon) == Some(&b':')).then(|| skip_space(bytes, colon + 1))
}

/// Past the string whose opening quote is at `at`: escapes well formed,
/// no raw control character.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut index = at + 1;
    loop {
        match *bytes.get(index)? {
            b'"' => return Some(index + 1),
            b'\\' => match *bytes.get(index + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => index += 2,
                b'u' => {
                    let hex = bytes.get(index + 2..index + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    index += 6;
                }
                _ => return None,
            },
            0x00..=0x1F => return None,
            _ => index += 1,
        }
    }
}

/// Past the number at `at`: `-`, an integer part without leading zeros,
/// then an optional fraction and exponent, each with digits.
fn number_end(bytes: &[u8], at: usize) -> Option<usize> {
    let digits = |from: usize| {
        let mut end = from;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        (end > from).then_some(end)
    };
    let mut index = at + usize::from(bytes.get(at) == Some(&b'-'));
    index = if bytes.get(index) == Some(&b'0') {
        index + 1
    } else {
        digits(index)?
    };
    if bytes.get(index) == Some(&b'.') {
        index = digits(index + 1)?;
    }
    if matches!(bytes.get(index), Some(b'e' | b'E')) {
        index += 1;
        if matches!(bytes.get(index), Some(b'+' | b'-')) {
            index += 1;
        }
        index = digits(index)?;
    }
    Some(index)
}

/// `raw` as an id the reply can carry back as the transport reads it: a
/// string `serde_json` reads, of at most [`MAX_ECHOED_ID_BYTES`], an
/// integer, or a number in float form with an integral value within
/// `f64`'s exact integers (`1.0`, `1e0`: rmcp reads them as that integer,
/// and answers a request it can read under it).
fn faithful_id(raw: &str) -> Option<Value> {
    /// 2^53: past it, not every integer has an `f64` of its own.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if raw.len() > MAX_ECHOED_ID_BYTES {
        return None;
    }
    match serde_json::from_str::<Value>(raw).ok()? {
        id @ Value::String(_) => Some(id),
        Value::Number(number) if number.is_i64() || number.is_u64() => Some(Value::Number(number)),
        Value::Number(number) => {
            let value = number
                .as_f64()
                .filter(|v| v.fract() == 0.0 && v.abs() < EXACT)?;
            // Exact: integral and below 2^53 in magnitude.
            #[allow(clippy::cast_possible_truncation)]
            let integer = value as i64;
            Some(Value::from(integer))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_top_level_is_read_past_what_serde_json_cannot() {
        let id = |line: &str| match unreadable(line.as_bytes()) {
            Unreadable::Request { id, fault } => Some((id, fault != Fault::Unreadable)),
            _ => None,
        };
        let fault = |line: &str| match unreadable(line.as_bytes()) {
            Unreadable::Request { fault, .. } => Some(fault),
            _ => None,
        };
        // The envelope, or the params.
        for (line, expected) in [
            (r#"{"jsonrpc":"2.0","id":1}"#, Fault::Envelope),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#,
                Fault::Envelope,
            ),
            (
                r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
                Fault::IdOutOfRange,
            ),
            (r#"{"id":1}"#, Fault::Envelope),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, Fault::Envelope),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
                Fault::Envelope,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#,
                Fault::Params,
            ),
            (
                r#"{"jsonrpc": "2.0" ,"id":1,"method":"tools/call","params":{"name":3}}"#,
                Fault::Params,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#,
                Fault::Params,
            ),
            // No MCP method: what is wrong is the method, whatever the params.
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"no/such","params":[1]}"#,
                Fault::Method,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"no\/such","params":7}"#,
                Fault::Method,
            ),
        ] {
            assert_eq!(fault(line), Some(expected), "{line}");
        }
        // A member named twice is no request: its id is echoed only when
        // every copy agrees.
        for (line, id) in [
            (
                r#"{"jsonrpc":"2.0","id":42,"id":43,"method":"ping"}"#,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"id":46,"method":"ping"}"#,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"id":7,"method":"ping","params":[]}"#,
                json!(7),
            ),
            (
                r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":8,"method":"ping","params":5}"#,
                json!(8),
            ),
            (
                r#"{"jsonrpc":"2.0","id":9,"method":"foo/bar","method":"ping","params":5}"#,
                json!(9),
            ),
            (
                r#"{"jsonrpc":"2.0","id":10,"method":"ping","params":{},"params":[1]}"#,
                json!(10),
            ),
        ] {
            match unreadable(line.as_bytes()) {
                Unreadable::Request { id: got, fault } => {
                    assert_eq!((got, fault), (id, Fault::Envelope), "{line}");
                }
                _ => panic!("{line}: not answered as a request"),
            }
        }
        // Keys are read as JSON reads them: an escaped `id` is the id.
        assert_eq!(
            fault(r#"{"jsonrpc":"2.0","\u0069d":3,"method":"ping","params":5}"#),
            Some(Fault::Params)
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","\u0069d":3,"\u006dethod":"no/such","params":[1]}"#),
            Some((json!(3), true))
        );
        assert_eq!(
            fault(r#"{"jsonrpc":"2.0","\u0069d":3,"\u006dethod":"no/such","params":[1]}"#),
            Some(Fault::Method)
        );
        // JSON by its grammar, whatever serde_json refuses beyond it; not
        // JSON at all is the parse error, whatever id it seems to have.
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        for json in [
            r#"{"a":"\ud800","b":1e400,"c":[-0.5E+3,true,false,null,{}],"d":"\u00e9\n\/"}"#,
            " [ 1 , { \"x\" : [ ] } ]\t",
            "42",
            deep.as_str(),
        ] {
            assert!(is_json(json), "{json}");
        }
        for not_json in [
            r#"{"x":}"#,
            r#"{"a" "b"}"#,
            "{'a':1}",
            "[1,]",
            r#"{"x":tru}"#,
            r#"{"x":"\q"}"#,
            "{\"x\":\"a\tb\"}",
            r#"{"x":01}"#,
            r#"{"x":1.}"#,
            r#"{"x":+1}"#,
            r#"{"x":1}}"#,
            r#"{"x":1,}"#,
            "[",
            "",
        ] {
            assert!(!is_json(not_json), "{not_json}");
            assert!(
                matches!(unreadable(not_json.as_bytes()), Unreadable::NotJson),
                "{not_json}"
            );
        }
        assert!(matches!(
            unreadable(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":}}"#),
            Unreadable::NotJson
        ));
        // No id and no method name: no message at all, answered under null.
        for line in [
            r#"{}"#,
            r#"{"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","method":5}"#,
            r#"{"foo":1}"#,
        ] {
            match unreadable(line.as_bytes()) {
                Unreadable::Request { id, fault } => {
                    assert_eq!((id, fault), (Value::Null, Fault::Envelope), "{line}");
                }
                _ => panic!("{line}: not answered"),
            }
        }
        // Answers (however malformed) are not answered.
        assert!(matches!(
            unreadable(br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#),
            Unreadable::Notification
        ));
        // A lone surrogate, a number beyond f64, nesting past serde_json's
        // limit: still JSON, so the id is found where the client put it;
        // malformed JSON is the parse error, whatever id it seems to have.
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"t":"\ud800"}}"#),
            Some((json!(7), false))
        );
        assert_eq!(
            id(r#"{"id":"a\"b","method":"ping","params":{"n":1e400}}"#),
            Some((json!("a\"b"), false))
        );
        assert_eq!(id(r#"{"id":111,"method":"ping","params":{"x":-}}"#), None);
        let deep = format!(
            r#"{{"id":9,"method":"ping","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(id(&deep), Some((json!(9), false)));
        // A method no server takes is what is wrong, whatever its params.
        assert_eq!(
            fault(r#"{"jsonrpc":"2.0","id":7,"method":"no/such","params":{"t":"\ud800"}}"#),
            Some(Fault::Method)
        );
        assert_eq!(
            id(r#"{"jsonrpc":"1.0","id":3,"method":"x"}"#),
            Some((json!(3), true))
        );
        assert_eq!(
            id(&format!(r#"{{"id":{},"method":"x"}}"#, u64::MAX)),
            Some((json!(u64::MAX), true))
        );
        // Not JSON: the parse error. JSON with an id that cannot be carried
        // back (even one serde_json cannot read): an invalid request, no id.
        for line in [
            r#"{"id":--1,"method":"ping"}"#,
            "{not json",
            r#"{"id":1,"method":"x"} trailing"#,
        ] {
            assert!(
                matches!(unreadable(line.as_bytes()), Unreadable::NotJson),
                "{line}"
            );
        }
        let long_id = format!(
            r#"{{"id":"{}","method":"ping"}}"#,
            "x".repeat(MAX_ECHOED_ID_BYTES)
        );
        for line in [
            r#"{"id":1e400,"method":"ping"}"#,
            r#"{"id":"\ud800","method":"ping"}"#,
            r#"{"id":18446744073709551616,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":5.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            &long_id,
        ] {
            assert!(
                matches!(
                    unreadable(line.as_bytes()),
                    Unreadable::Request {
                        id: Value::Null,
                        fault: Fault::Envelope
                    }
                ),
                "{line}"
            );
        }
        assert!(matches!(
            unreadable(br#"[{"id":1,"method":"ping"}]"#),
            Unreadable::Batch
        ));
        assert!(matches!(
            unreadable(br#"{"jsonrpc":"2.0","method":"notifications/x","params":{"n":1e400}}"#),
            Unreadable::Notification
        ));
    }
}
