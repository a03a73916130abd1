//! Normalizes schemars output into the subset wherever the meaning is kept,
//! and rejects the rest with a message that names the Rust-side fix.
//!
//! | schemars emits | becomes |
//! |---|---|
//! | root `$schema`, root `title` (the Rust type name) | removed |
//! | `true` subschema (`serde_json::Value`) | `{}` |
//! | integer `format` (`int32`, `uint64`, …) | `minimum`/`maximum` of the type (a tighter author bound is kept) |
//! | number `format` `float` (an `f32`) | `minimum`/`maximum` of a finite `f32` (a tighter author bound is kept) |
//! | number `format` `double` | removed |
//! | root recursion `$ref: "#"` | a copy of the root under `$defs/<Name>` and refs retargeted |
//! | homogeneous tuple (`prefixItems` of equal schemas) | `items` + the same `minItems`/`maxItems` |
//! | `$ref` with sibling `properties` (internally tagged newtype variant) | the target object merged in |
//! | `oneOf` whose branches are provably mutually exclusive | `anyOf` |
//! | `additionalProperties: {}` | `additionalProperties: true` |
//!
//! Rejected: 128-bit integers, mixed tuples, maps with typed values
//! (`additionalProperties: {schema}`), `oneOf` without provable exclusivity,
//! formats outside the subset, the `false` schema.

use serde_json::{Map, Value};

use super::one_of::exclusive_one_of;
use super::read::{resolve, types_of};
use super::subset::FORMATS;
use super::{SchemaError, push_pointer};

/// Normalizes a generated schema into the subset (see the module table).
///
/// The result still goes through [`check_subset`](super::check_subset), which
/// reports anything this pass leaves outside the subset.
pub fn normalize(mut schema: Value) -> Result<Value, SchemaError> {
    if let Value::Bool(true) = schema {
        return Ok(Value::Object(Map::new()));
    }
    let Value::Object(root) = &mut schema else {
        return Err(SchemaError::new(
            "",
            "",
            "the schema accepts nothing (`false`); give the type at least one valid value",
        ));
    };
    root.remove("$schema");
    let title = root.remove("title");
    retarget_root_recursion(root, title.as_ref().and_then(Value::as_str));

    local_pass(&mut schema, "")?;
    let defs = schema.get("$defs").and_then(Value::as_object).cloned();
    post_order(&mut schema, "", &mut |object, pointer| {
        merge_ref_siblings(object, pointer, defs.as_ref())
    })?;
    let defs = schema.get("$defs").and_then(Value::as_object).cloned();
    post_order(&mut schema, "", &mut |object, pointer| {
        exclusive_one_of(object, pointer, defs.as_ref())
    })?;
    Ok(schema)
}

/// The schema's validation shape: a copy without annotation keywords
/// (`description`, `title`, `examples`, `default`, `deprecated`) at any
/// level. Two schemas that accept the same documents in the same way have
/// the same shape, whatever their prose; property names are kept, even
/// when one is called `description`.
pub fn shape(schema: &Value) -> Value {
    let mut copy = schema.clone();
    // The rewrite never fails.
    let _ = post_order(&mut copy, "", &mut |object, _| {
        for keyword in ["description", "title", "examples", "default", "deprecated"] {
            object.remove(keyword);
        }
        Ok(())
    });
    copy
}

/// A rewrite of one schema object, given its JSON pointer.
type Rewrite<'a> = dyn FnMut(&mut Map<String, Value>, &str) -> Result<(), SchemaError> + 'a;

/// Applies `rewrite` to every schema object of the document, children first.
fn post_order(
    schema: &mut Value,
    pointer: &str,
    rewrite: &mut Rewrite<'_>,
) -> Result<(), SchemaError> {
    let Value::Object(object) = schema else {
        return Ok(());
    };
    for_each_child(object, pointer, |child, at| post_order(child, &at, rewrite))?;
    rewrite(object, pointer)
}

fn for_each_child(
    object: &mut Map<String, Value>,
    pointer: &str,
    mut visit: impl FnMut(&mut Value, String) -> Result<(), SchemaError>,
) -> Result<(), SchemaError> {
    for keyword in ["properties", "$defs"] {
        if let Some(Value::Object(children)) = object.get_mut(keyword) {
            let here = push_pointer(pointer, keyword);
            for (name, child) in children.iter_mut() {
                visit(child, push_pointer(&here, name))?;
            }
        }
    }
    for keyword in ["anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(children)) = object.get_mut(keyword) {
            let here = push_pointer(pointer, keyword);
            for (index, child) in children.iter_mut().enumerate() {
                visit(child, push_pointer(&here, &index.to_string()))?;
            }
        }
    }
    for keyword in ["items", "additionalProperties"] {
        if let Some(child @ Value::Object(_)) = object.get_mut(keyword) {
            visit(child, push_pointer(pointer, keyword))?;
        }
    }
    Ok(())
}

/// `$ref: "#"` cannot survive moving the schema into a tool definition: copy
/// the root body under `$defs/<Name>` and point every self reference there.
fn retarget_root_recursion(root: &mut Map<String, Value>, title: Option<&str>) {
    fn has_root_ref(value: &Value) -> bool {
        match value {
            Value::Object(map) => {
                map.get("$ref").and_then(Value::as_str) == Some("#")
                    || map.values().any(has_root_ref)
            }
            Value::Array(items) => items.iter().any(has_root_ref),
            _ => false,
        }
    }
    fn retarget(value: &mut Value, target: &str) {
        match value {
            Value::Object(map) => {
                if map.get("$ref").and_then(Value::as_str) == Some("#") {
                    map.insert("$ref".to_owned(), Value::String(target.to_owned()));
                }
                map.values_mut().for_each(|child| retarget(child, target));
            }
            Value::Array(items) => items.iter_mut().for_each(|child| retarget(child, target)),
            _ => {}
        }
    }
    if !root.values().any(has_root_ref) {
        return;
    }
    let defs = root
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let base = title
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or("Root");
    let mut name = base.to_owned();
    let mut counter = 1;
    while defs.contains_key(&name) {
        counter += 1;
        name = format!("{base}{counter}");
    }
    let target = format!("#/$defs/{name}");
    let mut body = root.clone();
    body.remove("$defs");
    let mut body = Value::Object(body);
    retarget(&mut body, &target);
    for value in root.values_mut() {
        retarget(value, &target);
    }
    let mut defs = root
        .remove("$defs")
        .and_then(|defs| match defs {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default();
    defs.insert(name, body);
    root.insert("$defs".to_owned(), Value::Object(defs));
}

/// Bounds of the integer formats schemars emits.
fn integer_bounds(format: &str) -> Option<(i128, i128)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        // 64-bit ranges exceed what JSON numbers carry exactly (2^53); keep the
        // sign constraint and let typed deserialization reject the rest.
        "int64" | "int" => (i128::MIN, i128::MAX),
        "uint64" | "uint" => (0, i128::MAX),
        _ => return None,
    })
}

fn number(value: i128) -> Value {
    if let Ok(unsigned) = u64::try_from(value) {
        Value::from(unsigned)
    } else if let Ok(signed) = i64::try_from(value) {
        Value::from(signed)
    } else {
        Value::Null
    }
}

/// Replaces an integer `format` by the bounds it implies, keeping a tighter
/// author bound.
fn integer_format_to_bounds(
    object: &mut Map<String, Value>,
    format: &str,
    pointer: &str,
) -> Result<(), SchemaError> {
    if format == "int128" || format == "uint128" {
        return Err(SchemaError::new(
            "format",
            pointer,
            "128-bit integers are outside the range of JSON numbers agents can send; use i64/u64, or a String with a `pattern`",
        ));
    }
    let Some((min, max)) = integer_bounds(format) else {
        return Err(SchemaError::new(
            "format",
            pointer,
            format!(
                "integer format `{format}` is not understood; remove it or use bounds (`minimum`/`maximum`)"
            ),
        ));
    };
    #[allow(clippy::cast_precision_loss)] // bounds of at most 32 bits are exact
    let (min_f, max_f) = (min as f64, max as f64);
    let tighter_min = object
        .get("minimum")
        .and_then(Value::as_f64)
        .is_some_and(|current| current >= min_f);
    if min != i128::MIN && !tighter_min {
        object.insert("minimum".to_owned(), number(min));
    }
    let tighter_max = object
        .get("maximum")
        .and_then(Value::as_f64)
        .is_some_and(|current| current <= max_f);
    if max != i128::MAX && !tighter_max {
        object.insert("maximum".to_owned(), number(max));
    }
    object.remove("format");
    Ok(())
}

/// The largest JSON number that reads as a finite `f32`: numbers round to
/// the nearest `f32`, so everything below `f32::MAX` plus half a unit in
/// its last place (2^103) reads as `f32::MAX` (what serde_json writes for
/// it, `3.4028235e38`, is above `f32::MAX` as an `f64`); the tie itself
/// rounds to infinity, so the bound is the `f64` just below it (2^75
/// less, the `f64` spacing there).
pub(crate) const F32_READ_MAX: f64 = 340_282_356_779_733_623_858_607_532_500_980_858_880.0;

/// Replaces `format: float` (an `f32`) by the bounds of a number that
/// reads as a finite `f32`, keeping a tighter author bound: a number
/// beyond them would reach the handler as infinity.
fn float_bounds(object: &mut Map<String, Value>) {
    let max = F32_READ_MAX;
    let tighter_min = object
        .get("minimum")
        .and_then(Value::as_f64)
        .is_some_and(|current| current >= -max);
    if !tighter_min {
        object.insert("minimum".to_owned(), Value::from(-max));
    }
    let tighter_max = object
        .get("maximum")
        .and_then(Value::as_f64)
        .is_some_and(|current| current <= max);
    if !tighter_max {
        object.insert("maximum".to_owned(), Value::from(max));
    }
    object.remove("format");
}

/// Per-node rewrites that need no other part of the document, post-order.
fn local_pass(schema: &mut Value, pointer: &str) -> Result<(), SchemaError> {
    if let Value::Bool(true) = schema {
        *schema = Value::Object(Map::new());
        return Ok(());
    }
    let Value::Object(object) = schema else {
        return Ok(()); // `false` and non-objects are reported by the subset check
    };
    for_each_child(object, pointer, |child, at| local_pass(child, &at))?;

    if let Some(format) = object
        .get("format")
        .and_then(Value::as_str)
        .map(str::to_owned)
    {
        let types = types_of(object);
        if types.contains(&"integer") {
            integer_format_to_bounds(object, &format, pointer)?;
        } else if types.contains(&"number") && format == "float" {
            float_bounds(object);
        } else if types.contains(&"number") && format == "double" {
            object.remove("format");
        } else if !FORMATS.contains(&format.as_str()) {
            return Err(SchemaError::new(
                "format",
                pointer,
                format!(
                    "format `{format}` is outside the subset (date-time, date, uuid, email, uri); validate it with a `pattern` or a precondition instead"
                ),
            ));
        }
    }

    if let Some(Value::Object(extra)) = object.get("additionalProperties") {
        if extra.is_empty() {
            object.insert("additionalProperties".to_owned(), Value::Bool(true));
        } else {
            return Err(SchemaError::new(
                "additionalProperties",
                pointer,
                "maps with typed values (HashMap/BTreeMap<String, T>) are outside the subset; use a Vec of `#[agent_schema]` entry structs with named key and value fields, or serde_json::Value values",
            ));
        }
    }

    if let Some(Value::Array(elements)) = object.get("prefixItems") {
        let homogeneous = elements
            .split_first()
            .is_some_and(|(first, rest)| rest.iter().all(|element| element == first));
        if !homogeneous {
            return Err(SchemaError::new(
                "prefixItems",
                pointer,
                "tuples with elements of different types are outside the subset; use a struct with named fields (`#[agent_schema]`)",
            ));
        }
        let first = elements.first().cloned().unwrap_or(Value::Bool(true));
        object.remove("prefixItems");
        object.insert("items".to_owned(), first);
    }
    Ok(())
}

/// Keywords that only annotate and never change which values validate.
fn is_annotation(keyword: &str) -> bool {
    matches!(
        keyword,
        "description" | "title" | "default" | "examples" | "deprecated"
    )
}

/// An object schema that references another object schema beside its own
/// `properties` (schemars' internally tagged newtype variants, or flatten)
/// has serde's meaning "the tag plus the target's fields": merge the target in.
fn merge_ref_siblings(
    object: &mut Map<String, Value>,
    pointer: &str,
    defs: Option<&Map<String, Value>>,
) -> Result<(), SchemaError> {
    let Some(reference) = object
        .get("$ref")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Ok(());
    };
    let constraining_siblings = object
        .keys()
        .any(|key| key != "$ref" && !is_annotation(key));
    if !constraining_siblings {
        return Ok(());
    }
    let cannot = |why: &str| {
        Err(SchemaError::new(
            "$ref",
            pointer,
            format!(
                "a reference with sibling constraints cannot be expressed in the subset ({why}); wrap the inner type in a named field instead of flattening it"
            ),
        ))
    };
    let Some(Value::Object(target)) = resolve(&reference, defs) else {
        return cannot("its target is not an object schema");
    };
    let merge_keys = ["type", "properties", "required", "additionalProperties"];
    if let Some(key) = target
        .keys()
        .chain(object.keys())
        .find(|key| !merge_keys.contains(&key.as_str()) && !is_annotation(key) && *key != "$ref")
    {
        return cannot(&format!("`{key}` beside the reference"));
    }
    let is_object_type =
        |map: &Map<String, Value>| map.get("type").is_none_or(|t| t == &Value::from("object"));
    if !is_object_type(object) || !is_object_type(target) {
        return cannot("both sides must be objects");
    }
    let mut properties = object
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (name, property) in target
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if properties.insert(name.clone(), property.clone()).is_some() {
            return cannot(&format!("property `{name}` is defined on both sides"));
        }
    }
    let mut required: Vec<Value> = object
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for name in target
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !required.contains(name) {
            required.push(name.clone());
        }
    }
    object.remove("$ref");
    object.insert("type".to_owned(), Value::from("object"));
    object.insert("properties".to_owned(), Value::Object(properties));
    object.insert("required".to_owned(), Value::Array(required));
    if let Some(additional) = target.get("additionalProperties") {
        object.insert("additionalProperties".to_owned(), additional.clone());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integer_formats_become_bounds_keeping_tighter_ones() {
        let schema = normalize(json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "format": "uint32", "minimum": 0},
                "b": {"type": ["integer", "null"], "format": "uint8", "minimum": 3, "maximum": 255},
                "c": {"type": "number", "format": "double"}
            }
        }))
        .unwrap();
        assert_eq!(
            schema["properties"],
            json!({
                "a": {"type": "integer", "minimum": 0, "maximum": 4294967295u64},
                "b": {"type": ["integer", "null"], "minimum": 3, "maximum": 255},
                "c": {"type": "number"}
            })
        );
    }

    #[test]
    fn an_f32_is_bounded_to_finite_values_keeping_tighter_bounds() {
        let schema = normalize(json!({
            "type": "object",
            "properties": {
                "a": {"type": "number", "format": "float"},
                "b": {"type": ["number", "null"], "format": "float", "minimum": 0.0, "maximum": 1.0}
            }
        }))
        .unwrap();
        let max = F32_READ_MAX;
        assert_eq!(max, f64::from(f32::MAX) + 2f64.powi(103) - 2f64.powi(75));
        assert!((max as f32).is_finite());
        assert!((f64::from(f32::MAX) + 2f64.powi(103)) as f32 == f32::INFINITY);
        assert!(serde_json::from_str::<f64>("3.4028235e38").unwrap() <= max);
        assert_eq!(
            schema["properties"],
            json!({
                "a": {"type": "number", "minimum": -max, "maximum": max},
                "b": {"type": ["number", "null"], "minimum": 0.0, "maximum": 1.0}
            })
        );
    }

    #[test]
    fn root_recursion_moves_into_defs() {
        let schema = normalize(json!({
            "title": "Tree",
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}
        }))
        .unwrap();
        assert_eq!(
            schema["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Tree"})
        );
        assert_eq!(
            schema["$defs"]["Tree"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Tree"})
        );
        assert!(schema.get("title").is_none());
    }

    #[test]
    fn one_of_with_overlapping_branches_is_rejected() {
        let err =
            normalize(json!({"oneOf": [{"type": "string"}, {"type": "string", "minLength": 2}]}))
                .unwrap_err();
        assert_eq!(err.keyword(), "oneOf");
        let ok = normalize(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})).unwrap();
        assert!(ok.get("anyOf").is_some());
    }
}
