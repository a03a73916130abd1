//! AS-CONFIRM-002: canonical JSON is idempotent, parses back to the value
//! it was written from, and sorts object keys by UTF-16 code units.

use agent_surface::canonical::{Canonical, canonical_json, canonical_len_within, utf16_cmp};
use proptest::prelude::*;
use serde_json::Value;

use crate::strict::{Parsed, parse};
use crate::{QUICK, check, full, json_value};

/// Whether `parsed` (from canonical text) is `value`: numbers compare
/// exactly (integers by their digits, floats by their bits, `-0` as `0`),
/// object keys in canonical order and each exactly once.
fn same(parsed: &Parsed, value: &Value) -> Result<(), TestCaseError> {
    match (parsed, value) {
        (Parsed::Null, Value::Null) => {}
        (Parsed::Bool(a), Value::Bool(b)) => prop_assert_eq!(a, b),
        (Parsed::String(a), Value::String(b)) => prop_assert_eq!(a, b),
        (Parsed::Number(text), Value::Number(number)) => {
            if number.is_i64() || number.is_u64() {
                prop_assert_eq!(text, &number.to_string());
            } else {
                let f = number.as_f64().unwrap();
                let back: f64 = text.parse().unwrap();
                prop_assert!(back == f, "{} written as {}", f, text);
            }
        }
        (Parsed::Array(items), Value::Array(values)) => {
            prop_assert_eq!(items.len(), values.len());
            for (item, value) in items.iter().zip(values) {
                same(item, value)?;
            }
        }
        (Parsed::Object(entries), Value::Object(map)) => {
            prop_assert_eq!(entries.len(), map.len());
            for pair in entries.windows(2) {
                prop_assert!(
                    utf16_cmp(&pair[0].0, &pair[1].0).is_lt(),
                    "keys out of order: {:?} then {:?}",
                    pair[0].0,
                    pair[1].0
                );
            }
            for (key, item) in entries {
                same(item, map.get(key).unwrap())?;
            }
        }
        (parsed, value) => prop_assert!(false, "{:?} parsed from {}", parsed, value),
    }
    Ok(())
}

fn canonical_properties(value: Value) -> Result<(), TestCaseError> {
    let text = canonical_json(&value);
    let parsed = parse(&text).map_err(TestCaseError::fail)?;
    same(&parsed, &value)?;
    // Writing what was read changes nothing; serde_json reads it too.
    let rewritten = Canonical::of(&parsed.to_value());
    prop_assert_eq!(rewritten.as_str(), text.as_str());
    prop_assert!(serde_json::from_str::<Value>(&text).is_ok());
    prop_assert_eq!(canonical_len_within(&value, text.len()), Some(text.len()));
    if !text.is_empty() {
        prop_assert_eq!(canonical_len_within(&value, text.len() - 1), None);
    }
    Ok(())
}

#[test]
fn as_confirm_002_canonical_json_round_trips_sorted() {
    check(QUICK, json_value(), canonical_properties);
}

#[test]
#[ignore = "100 000 cases: run with --release -- --ignored"]
fn as_confirm_002_canonical_json_round_trips_sorted_full() {
    check(full(), json_value(), canonical_properties);
}
