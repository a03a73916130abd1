//! `oneOf` made `anyOf`: the proof that every pair of branches is mutually
//! exclusive (types, constants, required and forbidden keys), without which
//! the two keywords would accept different values.

use serde_json::{Map, Value};

use super::SchemaError;
use super::read::{resolve, types_of};

/// The JSON types a schema admits, if it says (`integer` counts as `number`).
fn admitted_types(object: &Map<String, Value>) -> Option<Vec<&'static str>> {
    fn json_type(value: &Value) -> &'static str {
        match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    if let Some(constant) = object.get("const") {
        return Some(vec![json_type(constant)]);
    }
    if let Some(Value::Array(values)) = object.get("enum") {
        return Some(values.iter().map(json_type).collect());
    }
    let declared = types_of(object);
    if declared.is_empty() {
        return None;
    }
    Some(
        declared
            .into_iter()
            .map(|name| match name {
                "integer" | "number" => "number",
                "object" => "object",
                "array" => "array",
                "string" => "string",
                "boolean" => "boolean",
                _ => "null",
            })
            .collect(),
    )
}

/// The finite set of values a schema admits, if it is a `const` or an `enum`.
fn finite_values(object: &Map<String, Value>) -> Option<Vec<&Value>> {
    if let Some(constant) = object.get("const") {
        return Some(vec![constant]);
    }
    object
        .get("enum")
        .and_then(Value::as_array)
        .map(|values| values.iter().collect())
}

fn disjoint_values(a: &[&Value], b: &[&Value]) -> bool {
    a.iter().all(|value| !b.contains(value))
}

fn required_keys(object: &Map<String, Value>) -> impl Iterator<Item = &str> {
    object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn property<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Map<String, Value>> {
    object.get("properties")?.get(name)?.as_object()
}

fn forbids(object: &Map<String, Value>, key: &str) -> bool {
    object.get("additionalProperties") == Some(&Value::Bool(false))
        && property(object, key).is_none()
}

/// Whether no value can satisfy both schemas.
fn mutually_exclusive(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    if let (Some(x), Some(y)) = (finite_values(a), finite_values(b))
        && disjoint_values(&x, &y)
    {
        return true;
    }
    if let (Some(x), Some(y)) = (admitted_types(a), admitted_types(b))
        && x.iter().all(|t| !y.contains(t))
    {
        return true;
    }
    // A tag: a property both require, with disjoint constant values.
    let tagged = required_keys(a).any(|key| {
        required_keys(b).any(|other| other == key)
            && match (property(a, key), property(b, key)) {
                (Some(x), Some(y)) => match (finite_values(x), finite_values(y)) {
                    (Some(x), Some(y)) => disjoint_values(&x, &y),
                    _ => false,
                },
                _ => false,
            }
    });
    // A key one side requires and the other side's closed object forbids.
    tagged
        || required_keys(a).any(|key| forbids(b, key))
        || required_keys(b).any(|key| forbids(a, key))
}

/// Renames `oneOf` to `anyOf` where every pair of branches is provably
/// mutually exclusive (then both keywords accept exactly the same values).
pub(super) fn exclusive_one_of(
    object: &mut Map<String, Value>,
    pointer: &str,
    defs: Option<&Map<String, Value>>,
) -> Result<(), SchemaError> {
    let Some(Value::Array(branches)) = object.get("oneOf") else {
        return Ok(());
    };
    let resolved: Vec<Option<&Map<String, Value>>> = branches
        .iter()
        .map(|branch| {
            let branch = branch.as_object()?;
            match branch.get("$ref").and_then(Value::as_str) {
                Some(reference) => resolve(reference, defs)?.as_object(),
                None => Some(branch),
            }
        })
        .collect();
    let exclusive = resolved.iter().enumerate().all(|(i, a)| {
        resolved.iter().skip(i + 1).all(|b| match (a, b) {
            (Some(a), Some(b)) => mutually_exclusive(a, b),
            _ => false,
        })
    });
    if !exclusive || object.contains_key("anyOf") {
        return Err(SchemaError::new(
            "oneOf",
            pointer,
            "`oneOf` branches that may overlap cannot be expressed with `anyOf`; tag the enum (`#[serde(tag = \"kind\")]`) or make the variants' shapes disjoint",
        ));
    }
    if let Some(branches) = object.remove("oneOf") {
        object.insert("anyOf".to_owned(), branches);
    }
    Ok(())
}
