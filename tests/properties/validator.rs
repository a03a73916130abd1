//! The validator never panics and reports a bounded, clean list of issues
//! for any JSON against the devices console's schemas and a few fixture
//! schemas, and accepts every value its schema allows.

use std::sync::OnceLock;

use agent_surface::schema::{CompiledSchema, compile};
use agent_surface::snapshot::SnapshotOptions;
use agent_surface::{Consumer, ConsumerKind, Environment, Registry};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::{QUICK, bounded, check, full, json_value, key};

/// A closed object with every kind of field.
fn flat_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
            "n": {"type": "integer", "minimum": 0, "maximum": 255},
            "mode": {"enum": ["replace", "add"]},
            "ratio": {"type": ["number", "null"], "multipleOf": 0.5}
        },
        "required": ["ids"],
        "additionalProperties": false
    })
}

/// A recursive tree.
fn tree_schema() -> Value {
    json!({
        "$ref": "#/$defs/Tree",
        "$defs": {"Tree": {"type": "object", "properties": {
            "label": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
        }, "required": ["label"], "additionalProperties": false}}
    })
}

/// A tagged union.
fn union_schema() -> Value {
    json!({"anyOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
         "required": ["kind", "x"], "additionalProperties": false},
        {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}},
         "required": ["kind", "y"], "additionalProperties": false}
    ]})
}

/// Every input and output schema of the devices console, and the fixtures.
fn validators() -> &'static [CompiledSchema] {
    static VALIDATORS: OnceLock<Vec<CompiledSchema>> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        let registry = Registry::builder().environment(Environment::Test).build();
        let _mounted = crate::mount_console(&registry);
        let snapshot = registry.snapshot(
            &SnapshotOptions::for_consumer(Consumer::new(ConsumerKind::Test, "props"))
                .include_unavailable(true),
        );
        let mut schemas = vec![flat_schema(), tree_schema(), union_schema()];
        for component in snapshot.components() {
            for capability in component.capabilities() {
                schemas.extend(capability.input_schema().cloned());
                schemas.extend(capability.output_schema().cloned());
            }
        }
        assert!(schemas.len() > 10, "the devices console has schemas");
        schemas
            .iter()
            .map(|schema| compile(schema).unwrap())
            .collect()
    })
}

fn any_value_is_checked_safely(value: Value) -> Result<(), TestCaseError> {
    for validator in validators() {
        let issues = validator.validate(&value);
        bounded(&issues)?;
        prop_assert_eq!(validator.is_valid(&value), issues.is_empty());
    }
    Ok(())
}

/// Values the flat schema allows.
fn flat_value() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec("[ -~]{1,6}", 1..4),
        proptest::option::of(0u8..=255),
        proptest::option::of(prop_oneof![Just("replace"), Just("add")]),
        proptest::option::of(proptest::option::of(
            (-8i32..8).prop_map(|h| f64::from(h) / 2.0),
        )),
    )
        .prop_map(|(ids, n, mode, ratio)| {
            let mut map = Map::new();
            map.insert("ids".to_owned(), json!(ids));
            if let Some(n) = n {
                map.insert("n".to_owned(), json!(n));
            }
            if let Some(mode) = mode {
                map.insert("mode".to_owned(), json!(mode));
            }
            if let Some(ratio) = ratio {
                map.insert("ratio".to_owned(), json!(ratio));
            }
            Value::Object(map)
        })
}

/// Trees the tree schema allows.
fn tree_value() -> impl Strategy<Value = Value> {
    let leaf = "[ -~]{0,6}".prop_map(|label| json!({ "label": label }));
    leaf.prop_recursive(6, 48, 4, |inner| {
        ("[ -~]{0,6}", prop::collection::vec(inner, 0..4))
            .prop_map(|(label, children)| json!({"label": label, "children": children}))
    })
}

/// Members of the tagged union.
fn union_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(|x| json!({"kind": "a", "x": x})),
        "[ -~]{0,6}".prop_map(|y| json!({"kind": "b", "y": y})),
    ]
}

fn allowed_values_are_accepted(
    (flat, tree, union, stray): (Value, Value, Value, String),
) -> Result<(), TestCaseError> {
    let fixtures = validators();
    prop_assert_eq!(fixtures[0].validate(&flat), Vec::new());
    prop_assert_eq!(fixtures[1].validate(&tree), Vec::new());
    prop_assert_eq!(fixtures[2].validate(&union), Vec::new());
    // One unknown property is exactly one issue, at its cleaned path.
    let mut extended = flat;
    if !["ids", "n", "mode", "ratio"].contains(&stray.as_str())
        && let Value::Object(map) = &mut extended
    {
        map.insert(stray.clone(), json!(1));
        let issues = fixtures[0].validate(&extended);
        prop_assert_eq!(issues.len(), 1);
        prop_assert!(issues[0].message().starts_with("unknown property"));
        bounded(&issues)?;
    }
    Ok(())
}

fn allowed() -> impl Strategy<Value = (Value, Value, Value, String)> {
    (flat_value(), tree_value(), union_value(), key())
}

#[test]
fn validator_never_panics_and_bounds_its_issues() {
    check(QUICK, json_value(), any_value_is_checked_safely);
}

#[test]
#[ignore = "100 000 cases: run with --release -- --ignored"]
fn validator_never_panics_and_bounds_its_issues_full() {
    check(full(), json_value(), any_value_is_checked_safely);
}

#[test]
fn validator_accepts_what_its_schema_allows() {
    check(QUICK, allowed(), allowed_values_are_accepted);
}

#[test]
#[ignore = "100 000 cases: run with --release -- --ignored"]
fn validator_accepts_what_its_schema_allows_full() {
    check(full(), allowed(), allowed_values_are_accepted);
}
