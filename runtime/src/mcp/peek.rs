//! The gate's look at a request body: what the gate decides on (the id,
//! whether the message is a request, and whether it is `initialize`), read
//! in one pass over the bytes without building the message, so the body is
//! parsed into a message once, by the transport.
//!
//! The pass checks the whole body's JSON syntax (ignored values included)
//! but not its shape as a JSON-RPC message: the transport's parse does,
//! and the gate turns its refusal into the gate's own answer.

use std::fmt;

use rmcp::model::{NumberOrString, RequestId};
use serde::Deserializer as _;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};

/// What the gate needs of a body that is one JSON object.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Peek {
    /// The top-level `id` when it is a string or a 64-bit signed integer,
    /// as the transport reads it (the last `id` key, as a parse into a
    /// JSON value keeps).
    pub(super) id: Option<RequestId>,
    /// A top-level `method` key is there: the message is a request (with
    /// an id) or a notification.
    pub(super) method: bool,
    /// A top-level `method` key is the string `initialize`.
    pub(super) initialize: bool,
    /// A top-level `method` key is the string `subscriptions/listen` (the
    /// request opens a stream).
    pub(super) listen: bool,
}

impl Peek {
    /// The decoded length of the id when it is a string.
    pub(super) fn string_id_len(&self) -> Option<usize> {
        match &self.id {
            Some(NumberOrString::String(text)) => Some(text.len()),
            _ => None,
        }
    }
}

/// `bytes` read as one JSON object, or `None` (not JSON, not an object,
/// trailing data): the gate then takes its full parse.
pub(super) fn peek(bytes: &[u8]) -> Option<Peek> {
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let peek = reader.deserialize_map(PeekVisitor).ok()?;
    reader.end().ok()?;
    Some(peek)
}

struct PeekVisitor;

impl<'de> Visitor<'de> for PeekVisitor {
    type Value = Peek;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Peek, A::Error> {
        let mut peek = Peek::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Id => peek.id = map.next_value::<IdValue>()?.0,
                Key::Method => {
                    peek.method = true;
                    match map.next_value::<Method>()? {
                        Method::Initialize => peek.initialize = true,
                        Method::Listen => peek.listen = true,
                        Method::Other => {}
                    }
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(peek)
    }
}

/// A top-level key, without keeping it.
enum Key {
    Id,
    Method,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    "id" => Key::Id,
                    "method" => Key::Method,
                    _ => Key::Other,
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Any JSON value: an id when it is a string or an `i64`.
struct IdValue(Option<RequestId>);

/// Any JSON value: which of the methods the gate looks for it names.
enum Method {
    Initialize,
    Listen,
    Other,
}

impl<'de> de::Deserialize<'de> for IdValue {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<IdValue, D::Error> {
        let found = deserializer.deserialize_any(AnyValue(|id: Scalar<'_>| match id {
            Scalar::Text(text) => Some(NumberOrString::String(text.into())),
            Scalar::Integer(n) => Some(NumberOrString::Number(n)),
        }))?;
        Ok(IdValue(found.flatten()))
    }
}

impl<'de> de::Deserialize<'de> for Method {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Method, D::Error> {
        let found = deserializer.deserialize_any(AnyValue(|value: Scalar<'_>| match value {
            Scalar::Text("initialize") => Method::Initialize,
            Scalar::Text("subscriptions/listen") => Method::Listen,
            _ => Method::Other,
        }))?;
        Ok(found.unwrap_or(Method::Other))
    }
}

/// A string, or an integer that fits an `i64`.
enum Scalar<'a> {
    Text(&'a str),
    Integer(i64),
}

/// Reads any JSON value (nested ones are skipped), applying `F` to a string
/// or an `i64`.
struct AnyValue<F>(F);

impl<'de, F: FnOnce(Scalar<'_>) -> T, T> Visitor<'de> for AnyValue<F> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<Option<T>, E> {
        Ok(Some((self.0)(Scalar::Text(text))))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Option<T>, E> {
        Ok(Some((self.0)(Scalar::Integer(n))))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Option<T>, E> {
        Ok(i64::try_from(n).ok().map(|n| (self.0)(Scalar::Integer(n))))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Option<T>, E> {
        // `1.0` and `1e2` are integers in float form, read so by the
        // transport when an `f64` holds them exactly (below 2^53).
        const EXACT: f64 = 9_007_199_254_740_992.0;
        #[allow(clippy::cast_possible_truncation)] // integral and below 2^53
        let integer = (n.fract() == 0.0 && n.abs() < EXACT).then_some(n as i64);
        Ok(integer.map(|n| (self.0)(Scalar::Integer(n))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Option<T>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{NumberOrString, Peek, peek};

    #[test]
    fn reads_the_id_and_the_method_of_one_object() {
        let call = br#"{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"x","arguments":{"id":"zzzzzz"}}}"#;
        assert_eq!(
            peek(call),
            Some(Peek {
                id: Some(NumberOrString::String("abc".into())),
                method: true,
                initialize: false,
                listen: false
            })
        );
        let init = br#"{"id":7,"method":"init\u0069alize","params":{}}"#;
        assert_eq!(
            peek(init),
            Some(Peek {
                id: Some(NumberOrString::Number(7)),
                method: true,
                initialize: true,
                listen: false
            })
        );
        let escaped = br#"{"id":"\u00e9\n","id":"\u00e9\n\t"}"#;
        assert_eq!(peek(escaped).and_then(|p| p.string_id_len()), Some(4));
        // A response carries an id and no method; ids rmcp cannot read are
        // no ids.
        let response = br#"{"jsonrpc":"2.0","id":-3,"result":{}}"#;
        assert_eq!(
            peek(response),
            Some(Peek {
                id: Some(NumberOrString::Number(-3)),
                method: false,
                initialize: false,
                listen: false
            })
        );
        let listen = br#"{"id":2,"method":"subscriptions/listen","params":{}}"#;
        assert!(peek(listen).is_some_and(|p| p.listen && !p.initialize));
        // The id as the transport reads it, in every form it reads.
        for body in [
            &br#"{"id":1}"#[..],
            br#"{"id":1.0}"#,
            br#"{"id":1e0}"#,
            br#"{"id":-0.0}"#,
            br#"{"id":9007199254740991.0}"#,
            br#"{"id":9007199254740992.0}"#,
            br#"{"id":1.5}"#,
            br#"{"id":18446744073709551615}"#,
            br#"{"id":9223372036854775807}"#,
            br#"{"id":"x"}"#,
            br#"{"id":[1]}"#,
            br#"{"id":null}"#,
        ] {
            #[derive(serde::Deserialize)]
            struct Read {
                id: NumberOrString,
            }
            let transport = serde_json::from_slice::<Read>(body)
                .ok()
                .map(|read| read.id);
            assert_eq!(
                peek(body).and_then(|p| p.id),
                transport,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn anything_but_one_json_object_is_left_to_the_full_parse() {
        for body in [
            &b"not json"[..],
            b"[{\"id\":1}]",
            b"{\"id\":1} {}",
            b"{\"id\":1,}",
            b"{\"a\":[1,}",
            b"7",
        ] {
            assert_eq!(peek(body), None, "{}", String::from_utf8_lossy(body));
        }
    }
}
