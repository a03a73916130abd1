//! AS-CONFIRM-002: canonical JSON and the confirmation digest.

use agent_surface::canonical::{Canonical, Sha256Digest, canonical_json, fnv1a64};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

#[test]
fn as_confirm_002_key_order_is_irrelevant() {
    let a: Value = serde_json::from_str(r#"{"b":1,"a":{"d":[3,{"y":1,"x":2}],"c":null}}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{"a":{"c":null,"d":[3,{"x":2,"y":1}]},"b":1}"#).unwrap();
    assert_eq!(
        canonical_json(&a),
        r#"{"a":{"c":null,"d":[3,{"x":2,"y":1}]},"b":1}"#
    );
    assert_eq!(Canonical::of(&a), Canonical::of(&b));
    assert_eq!(Canonical::of(&a).sha256(), Canonical::of(&b).sha256());
    assert_eq!(fnv1a64(&a), fnv1a64(&b));
}

#[test]
fn as_confirm_002_negative_zero_equals_zero_and_numbers_are_normalized() {
    let a = json!({"n": -0.0, "m": 1.0, "big": 1e21, "small": 1.5e-7});
    let b = json!({"n": 0, "m": 1, "big": 1e21, "small": 1.5e-7});
    assert_eq!(
        canonical_json(&a),
        r#"{"big":1e+21,"m":1,"n":0,"small":1.5e-7}"#
    );
    assert_eq!(Canonical::of(&a), Canonical::of(&b));
}

#[test]
fn as_confirm_002_absent_fields_are_omitted_not_null() {
    // A field that is absent and a field that is null are different requests.
    let absent = json!({"ids": ["d1"]});
    let null = json!({"ids": ["d1"], "reason": null});
    assert_ne!(Canonical::of(&absent), Canonical::of(&null));
    assert_eq!(canonical_json(&absent), r#"{"ids":["d1"]}"#);
}

#[test]
fn as_confirm_002_arrays_keep_their_order() {
    assert_ne!(
        Canonical::of(&json!(["d1", "d2"])),
        Canonical::of(&json!(["d2", "d1"]))
    );
}

#[test]
fn as_confirm_002_evidence_matching_is_exact_value_not_hash_only() {
    // Equality compares the full canonical text; the digest is only a digest.
    let approved = Canonical::of(&json!({"deviceIds": ["d1", "d2"], "reason": "maintenance"}));
    let same = Canonical::of(&json!({"reason": "maintenance", "deviceIds": ["d1", "d2"]}));
    let changed = Canonical::of(&json!({"deviceIds": ["d1", "d2", "d3"], "reason": "maintenance"}));
    assert_eq!(approved, same);
    assert_ne!(approved, changed);
    assert_eq!(approved.as_str(), same.as_str());
    assert_ne!(approved.sha256(), changed.sha256());
    // The streamed digest equals the digest of the materialized text.
    let value = json!({"z": [1, 2, {"k": "v"}], "a": "é\n"});
    assert_eq!(Sha256Digest::of(&value), Canonical::of(&value).sha256());
    assert_eq!(Sha256Digest::of(&value).to_string().len(), 64);
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[ -~é\u{1f600}\u{ff21}\n]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z\u{ff21}\u{1f600}]{0,4}", inner), 0..6).prop_map(
                |entries| Value::Object(entries.into_iter().collect::<Map<String, Value>>())
            ),
        ]
    })
}

fn reversed(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.reverse();
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), reversed(v)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

proptest! {
    #[test]
    fn as_confirm_002_canonical_text_is_valid_json_and_order_free(value in json_value()) {
        let text = canonical_json(&value);
        // Always valid JSON (serde_json's fast float parser may round extreme
        // exponents differently, so the parsed value is not compared).
        prop_assert!(serde_json::from_str::<Value>(&text).is_ok());
        prop_assert_eq!(Canonical::of(&reversed(&value)), Canonical::of(&value));
        prop_assert_eq!(fnv1a64(&reversed(&value)), fnv1a64(&value));
    }
}
