//! Reading a schema node: the JSON types it names and the definitions its
//! internal references point to, shared by normalization and the `oneOf`
//! exclusivity proof.

use serde_json::{Map, Value};

/// The JSON types a node names in `type` (one, or a list).
pub(super) fn types_of(object: &Map<String, Value>) -> Vec<&str> {
    match object.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Resolves an internal reference into the given definitions.
pub(super) fn resolve<'a>(
    reference: &str,
    defs: Option<&'a Map<String, Value>>,
) -> Option<&'a Value> {
    defs?.get(reference.strip_prefix("#/$defs/")?)
}
