//! How a JSON Schema changed, in reach: what the agent may now send that it
//! could not (loosening: widening) or no longer may (tightening:
//! narrowing), each change one line naming the place (`/deviceIds`) and
//! the keyword. Wording keywords (`description`, `title`, `examples`) are
//! neutral; a change the comparison cannot order (a new `pattern`) counts
//! as widening.

use serde_json::{Map, Value};

use crate::finding::Class;

/// One schema change: its class and a one-line detail.
pub(crate) type Change = (Class, String);

const LOWER_BOUNDS: [&str; 6] = [
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
    "minContains",
];
const UPPER_BOUNDS: [&str; 6] = [
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
    "maxContains",
];
const WORDING: [&str; 5] = ["description", "title", "examples", "$comment", "deprecated"];
const SUBSCHEMAS: [&str; 4] = ["items", "additionalItems", "not", "contains"];
const VARIANTS: [&str; 3] = ["oneOf", "anyOf", "allOf"];

fn place(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

fn number(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64)
}

/// A bound as written.
fn text_of(value: Option<&Value>) -> String {
    value.map(Value::to_string).unwrap_or_default()
}

/// Orders two JSON numbers exactly (integers as integers, beyond 2^53).
fn order(b: &Value, a: &Value) -> Option<std::cmp::Ordering> {
    let int = |v: &Value| {
        v.as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
    };
    match (int(b), int(a)) {
        (Some(b), Some(a)) => Some(b.cmp(&a)),
        _ => b.as_f64()?.partial_cmp(&a.as_f64()?),
    }
}

fn bound(
    path: &str,
    key: &str,
    lower: bool,
    b: Option<&Value>,
    a: Option<&Value>,
    out: &mut Vec<Change>,
) {
    let at = place(path);
    let change = match (number(b), number(a)) {
        (Some(_), None) => Some((
            Class::Widening,
            format!("{at}: {key} {} removed", text_of(b)),
        )),
        (None, Some(_)) => Some((
            Class::Narrowing,
            format!("{at}: {key} {} added", text_of(a)),
        )),
        (Some(_), Some(_))
            if order(b.unwrap_or(&Value::Null), a.unwrap_or(&Value::Null))
                != Some(std::cmp::Ordering::Equal) =>
        {
            let ordering = order(b.unwrap_or(&Value::Null), a.unwrap_or(&Value::Null));
            let (b, a) = (text_of(b), text_of(a));
            let looser = if lower {
                ordering == Some(std::cmp::Ordering::Greater)
            } else {
                ordering == Some(std::cmp::Ordering::Less)
            };
            let class = if looser {
                Class::Widening
            } else {
                Class::Narrowing
            };
            let verb = if looser { "loosened" } else { "tightened" };
            Some((class, format!("{at}: {key} {verb}: {b} → {a}")))
        }
        _ => None,
    };
    out.extend(change);
}

fn set_of(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().map(Value::to_string).collect(),
        Some(Value::String(one)) => vec![Value::from(one.as_str()).to_string()],
        _ => Vec::new(),
    }
}

/// Values only in `a` (sorted text forms).
fn only_in(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| !b.contains(x)).cloned().collect()
}

fn listed(
    path: &str,
    key: &str,
    b: Option<&Value>,
    a: Option<&Value>,
    more_is_wider: bool,
    out: &mut Vec<Change>,
) {
    let (before, after) = (set_of(b), set_of(a));
    let at = place(path);
    let (wider, narrower) = if more_is_wider {
        (Class::Widening, Class::Narrowing)
    } else {
        (Class::Narrowing, Class::Widening)
    };
    // An `enum`, a `type` or a `required` that disappears restricts
    // nothing any more: wider, whichever it was; one that appears, narrower.
    if b.is_some() && a.is_none() {
        out.push((Class::Widening, format!("{at}: {key} removed")));
        return;
    }
    if b.is_none() && a.is_some() {
        out.push((Class::Narrowing, format!("{at}: {key} added")));
        return;
    }
    let added = only_in(&after, &before);
    if !added.is_empty() {
        out.push((wider, format!("{at}: {key} gained {}", added.join(", "))));
    }
    let removed = only_in(&before, &after);
    if !removed.is_empty() {
        out.push((narrower, format!("{at}: {key} lost {}", removed.join(", "))));
    }
}

/// The values of variants that are each one constant (`const`, or an
/// `enum` of one), as text; `None` when any variant is more than that.
fn constants(variants: &[Value]) -> Option<Vec<String>> {
    variants
        .iter()
        .map(|variant| {
            variant.get("const").map(Value::to_string).or_else(|| {
                match variant
                    .get("enum")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                {
                    Some([one]) => Some(one.to_string()),
                    _ => None,
                }
            })
        })
        .collect()
}

fn object(value: &Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map.clone(),
        Value::Bool(true) => Map::new(),
        _ => Map::new(),
    }
}

/// Whether `additionalProperties` (absent, `true`, `false` or a schema)
/// lets unknown properties through.
fn open(value: Option<&Value>) -> bool {
    !matches!(value, Some(Value::Bool(false)))
}

fn walk(cx: &mut Walk, path: &str, before: &Value, after: &Value, out: &mut Vec<Change>) {
    // Equal text is not equal meaning when it refers to definitions: the
    // references are followed first.
    if before == after && !has_ref(before) {
        return;
    }
    cx.steps += 1;
    if cx.steps > MAX_STEPS {
        if !cx.stopped {
            cx.stopped = true;
            out.push((
                Class::Widening,
                format!("{}: schema too large to compare in full", place(path)),
            ));
        }
        return;
    }
    // A reference is compared once per pair of targets, where it is first
    // met (a recursive type is compared once, not expanded).
    let (b_ref, a_ref) = (ref_name(before), ref_name(after));
    if b_ref.is_some() || a_ref.is_some() {
        let pair = (
            b_ref.clone().unwrap_or_default(),
            a_ref.clone().unwrap_or_default(),
        );
        if !cx.visited.insert(pair) {
            return;
        }
        let b = b_ref
            .and_then(|name| cx.before.get(&name).cloned())
            .unwrap_or_else(|| before.clone());
        let a = a_ref
            .and_then(|name| cx.after.get(&name).cloned())
            .unwrap_or_else(|| after.clone());
        walk(cx, path, &b, &a, out);
        return;
    }
    if before.is_boolean() || after.is_boolean() {
        let class = if after == &Value::Bool(true) || before == &Value::Bool(false) {
            Class::Widening
        } else {
            Class::Narrowing
        };
        out.push((class, format!("{}: schema {before} → {after}", place(path))));
        return;
    }
    let (b, a) = (object(before), object(after));
    let at = place(path);
    for (i, key) in LOWER_BOUNDS.iter().chain(&UPPER_BOUNDS).enumerate() {
        bound(
            path,
            key,
            i < LOWER_BOUNDS.len(),
            b.get(*key),
            a.get(*key),
            out,
        );
    }
    listed(path, "enum", b.get("enum"), a.get("enum"), true, out);
    listed(path, "type", b.get("type"), a.get("type"), true, out);
    listed(
        path,
        "required",
        b.get("required"),
        a.get("required"),
        false,
        out,
    );
    for key in ["const", "pattern", "format", "multipleOf", "uniqueItems"] {
        match (b.get(key), a.get(key)) {
            (Some(x), None) => out.push((Class::Widening, format!("{at}: {key} {x} removed"))),
            (None, Some(y)) => out.push((Class::Narrowing, format!("{at}: {key} {y} added"))),
            (Some(x), Some(y)) if x != y => {
                out.push((Class::Widening, format!("{at}: {key} changed: {x} → {y}")))
            }
            _ => {}
        }
    }
    match (
        open(b.get("additionalProperties")),
        open(a.get("additionalProperties")),
    ) {
        (false, true) => out.push((
            Class::Widening,
            format!("{at}: additionalProperties opened"),
        )),
        (true, false) => out.push((
            Class::Narrowing,
            format!("{at}: additionalProperties closed"),
        )),
        _ => {
            if let (Some(x), Some(y)) =
                (b.get("additionalProperties"), a.get("additionalProperties"))
                && x.is_object()
                && y.is_object()
            {
                walk(cx, &format!("{path}/*"), x, y, out);
            }
        }
    }
    let empty = Map::new();
    let props = |m: &Map<String, Value>| {
        m.get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    let (bp, ap) = (props(&b), props(&a));
    for (name, schema) in &ap {
        match bp.get(name) {
            Some(old) => walk(cx, &format!("{path}/{name}"), old, schema, out),
            None => out.push((Class::Widening, format!("{path}/{name}: property added"))),
        }
    }
    for name in bp.keys().filter(|name| !ap.contains_key(*name)) {
        out.push((Class::Narrowing, format!("{path}/{name}: property removed")));
    }
    for key in SUBSCHEMAS {
        match (b.get(key), a.get(key)) {
            (Some(x), Some(y)) => walk(cx, &format!("{path}/{key}"), x, y, out),
            (Some(_), None) => out.push((Class::Widening, format!("{at}: {key} removed"))),
            (None, Some(_)) => out.push((Class::Narrowing, format!("{at}: {key} added"))),
            (None, None) => {}
        }
    }
    for key in VARIANTS {
        let (x, y) = (
            b.get(key).and_then(Value::as_array),
            a.get(key).and_then(Value::as_array),
        );
        match (x, y) {
            (Some(x), Some(y))
                if key != "allOf" && constants(x).is_some() && constants(y).is_some() =>
            {
                let (old, new) = (
                    constants(x).unwrap_or_default(),
                    constants(y).unwrap_or_default(),
                );
                let added = only_in(&new, &old);
                if !added.is_empty() {
                    out.push((
                        Class::Widening,
                        format!("{at}: {key} gained value {}", added.join(", ")),
                    ));
                }
                let removed = only_in(&old, &new);
                if !removed.is_empty() {
                    out.push((
                        Class::Narrowing,
                        format!("{at}: {key} lost value {}", removed.join(", ")),
                    ));
                }
            }
            (Some(x), Some(y)) => {
                for (i, (old, new)) in x.iter().zip(y).enumerate() {
                    walk(cx, &format!("{path}/{key}/{i}"), old, new, out);
                }
                if y.len() > x.len() {
                    let class = if key == "allOf" {
                        Class::Narrowing
                    } else {
                        Class::Widening
                    };
                    out.push((
                        class,
                        format!("{at}: {key} gained {} variant(s)", y.len() - x.len()),
                    ));
                } else if y.len() < x.len() {
                    let class = if key == "allOf" {
                        Class::Widening
                    } else {
                        Class::Narrowing
                    };
                    out.push((
                        class,
                        format!("{at}: {key} lost {} variant(s)", x.len() - y.len()),
                    ));
                }
            }
            (Some(_), None) => out.push((Class::Widening, format!("{at}: {key} removed"))),
            (None, Some(_)) => out.push((Class::Narrowing, format!("{at}: {key} added"))),
            (None, None) => {}
        }
    }
    for key in b.keys().chain(a.keys()) {
        let known = LOWER_BOUNDS.contains(&key.as_str())
            || UPPER_BOUNDS.contains(&key.as_str())
            || SUBSCHEMAS.contains(&key.as_str())
            || VARIANTS.contains(&key.as_str())
            || [
                "enum",
                "type",
                "required",
                "const",
                "pattern",
                "format",
                "multipleOf",
                "uniqueItems",
                "additionalProperties",
                "properties",
                "$ref",
                "$defs",
                "definitions",
            ]
            .contains(&key.as_str());
        if known || b.get(key) == a.get(key) {
            continue;
        }
        let class = if WORDING.contains(&key.as_str()) {
            Class::Neutral
        } else {
            Class::Widening
        };
        // The runtime fills defaults into the input: an omitted field now
        // means something else.
        let line = if key == "default" {
            format!(
                "{at}: default changed: {} → {}",
                text_of(b.get(key)),
                text_of(a.get(key))
            )
        } else {
            format!("{at}: {key} changed")
        };
        if !out.iter().any(|(_, existing)| existing == &line) {
            out.push((class, line));
        }
    }
}

/// At most this many comparisons per schema pair.
const MAX_STEPS: usize = 100_000;

/// What a comparison carries: both sides' definitions, the reference pairs
/// already compared, and a budget.
struct Walk {
    before: Map<String, Value>,
    after: Map<String, Value>,
    visited: std::collections::BTreeSet<(String, String)>,
    steps: usize,
    stopped: bool,
}

/// Whether a `$ref` appears anywhere in `schema` (equal text may still
/// reach definitions that changed).
fn has_ref(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.contains_key("$ref") || map.values().any(has_ref),
        Value::Array(items) => items.iter().any(has_ref),
        _ => false,
    }
}

/// The definition a local `$ref` names (`#/$defs/…`, `#/definitions/…`).
fn ref_name(schema: &Value) -> Option<String> {
    let reference = schema.get("$ref")?.as_str()?;
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
        .map(str::to_owned)
}

fn definitions(schema: &Value) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(map)) = schema.get(key) {
            defs.extend(map.clone());
        }
    }
    defs
}

/// The changes from `before` to `after`, each a class and a line.
pub(crate) fn changes(before: &Value, after: &Value) -> Vec<Change> {
    let mut cx = Walk {
        before: definitions(before),
        after: definitions(after),
        visited: std::collections::BTreeSet::new(),
        steps: 0,
        stopped: false,
    };
    let mut out = Vec::new();
    walk(&mut cx, "", before, after, &mut out);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing)] // test code

    use super::*;
    use serde_json::json;

    fn classes(before: Value, after: Value) -> Vec<(Class, String)> {
        changes(&before, &after)
    }

    #[test]
    fn loosening_is_widening_and_tightening_narrowing_with_a_line_each() {
        let base = json!({"type": "object", "additionalProperties": false, "required": ["name"],
            "properties": {"name": {"type": "string", "maxLength": 10, "pattern": "^[a-z]+$"},
                           "kind": {"enum": ["a", "b"]}}});
        let mut loose = base.clone();
        loose["properties"]["name"]
            .as_object_mut()
            .map(|o| o.remove("maxLength"));
        loose["properties"]["kind"]["enum"] = json!(["a", "b", "c"]);
        loose["properties"]["extra"] = json!({"type": "string"});
        loose["additionalProperties"] = json!(true);
        loose["properties"]["name"]
            .as_object_mut()
            .map(|o| o.remove("pattern"));
        let found = classes(base.clone(), loose.clone());
        for line in [
            "/name: maxLength 10 removed",
            "/kind: enum gained \"c\"",
            "/extra: property added",
            "/: additionalProperties opened",
            "/name: pattern \"^[a-z]+$\" removed",
        ] {
            assert!(
                found.contains(&(Class::Widening, line.to_owned())),
                "{line}: {found:?}"
            );
        }
        assert!(
            classes(loose, base)
                .iter()
                .all(|(class, _)| *class == Class::Narrowing)
        );
        let mut worded = json!({"type": "string", "description": "a"});
        let before = worded.clone();
        worded["description"] = json!("b");
        assert_eq!(
            classes(before, worded),
            [(Class::Neutral, "/: description changed".to_owned())]
        );
    }
}
