//! Omitted means unchanged, and a number means a number the handler's type
//! holds (AS-SCHEMA-001: the schema subset, as schemars output is
//! normalized into it and validated):
//!
//! - an `Option<Option<T>>` field tells absent, `null` and a value apart
//!   from the agent's JSON to the handler: schema defaults never fill an
//!   absent field with `null`;
//! - an `f32` field refuses a number beyond a finite `f32` (`1e39` would
//!   reach the handler as infinity) with `INVALID_INPUT`.

use std::sync::Arc;

use agent_surface::prelude::*;
use serde::{Deserialize, Deserializer};
use serde_json::json;

use crate::fixtures::{call, code, registry};

/// Distinguishes an explicit `null` (clear) from an absent field (keep).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// A change to a label and a ratio; omitted fields stay as they are.
#[agent_schema]
#[derive(Clone, Debug, Default)]
pub(crate) struct Patch {
    /// The label; null clears it.
    #[serde(default, deserialize_with = "present")]
    #[schemars(length(max = 32))]
    pub(crate) label: Option<Option<String>>,
    /// A ratio.
    #[serde(default)]
    pub(crate) ratio: Option<f32>,
}

/// What the handler saw.
#[agent_schema]
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Seen {
    /// `unchanged`, `cleared` or `set <label>`.
    pub(crate) label: String,
    /// The ratio, when one came.
    pub(crate) ratio: Option<f32>,
}

/// A record the agent may patch.
pub(crate) struct Record;

/// A record.
#[agent_component(type = "test.record")]
impl Record {
    /// Patch the record.
    #[action(effect = "local-state")]
    fn patch(&self, input: Patch) -> Seen {
        Seen {
            label: match input.label {
                None => "unchanged".to_owned(),
                Some(None) => "cleared".to_owned(),
                Some(Some(label)) => format!("set {label}"),
            },
            ratio: input.ratio,
        }
    }
}

fn patch(input: serde_json::Value) -> Invocation {
    Invocation::new("view:test.record.patch").input(input)
}

#[tokio::test]
async fn as_schema_001_an_omitted_double_option_is_unchanged_null_clears_a_value_sets() {
    let registry = registry();
    let _mounted = registry.mount(Arc::new(Record)).unwrap();
    for (input, seen) in [
        (json!({}), "unchanged"),
        (json!({"ratio": 0.5}), "unchanged"),
        (json!({"label": null}), "cleared"),
        (json!({"label": "north"}), "set north"),
    ] {
        let result = call(&registry, patch(input.clone())).await;
        assert_eq!(
            result.output().and_then(|out| out.get("label")),
            Some(&json!(seen)),
            "{input}: {result:?}"
        );
    }
}

#[tokio::test]
async fn as_schema_001_an_f32_beyond_its_range_is_invalid_input() {
    let registry = registry();
    let _mounted = registry.mount(Arc::new(Record)).unwrap();
    let fine = call(&registry, patch(json!({"ratio": 3.0e38}))).await;
    assert_eq!(
        fine.output().and_then(|out| out.get("ratio")),
        Some(&json!(3.0e38_f32)),
        "{fine:?}"
    );
    // What serde_json writes for `f32::MAX` reads back as `f32::MAX`.
    let written = serde_json::to_string(&f32::MAX).unwrap();
    let largest = call(
        &registry,
        patch(serde_json::from_str(&format!("{{\"ratio\": {written}}}")).unwrap()),
    )
    .await;
    assert_eq!(
        largest.output().and_then(|out| out.get("ratio")),
        Some(&json!(f32::MAX)),
        "{written}: {largest:?}"
    );
    for ratio in [1e39, -1e39, 3.5e38] {
        let refused = call(&registry, patch(json!({ "ratio": ratio }))).await;
        assert_eq!(
            code(&refused),
            Some(ErrorCode::InvalidInput),
            "{ratio}: {refused:?}"
        );
    }
}
