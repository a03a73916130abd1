//! Caller-supplied JSON Schemas for types that cannot be annotated:
//! AS-SCHEMA-002 (the analog of `fromJsonSchema`).

use std::sync::Arc;

use agent_surface::error::DefinitionErrorKind;
use agent_surface::prelude::*;
use agent_surface::registry::MountError;
use agent_surface::schema::{SchemaLimits, Supplied, SuppliedSchema, check_supplied};
use agent_surface_tests::supplied::{Loose, NotSchema};
use serde_json::{Value, json};

use crate::fixtures::{call, code, registry};

/// A value from a crate we cannot annotate.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Point {
    lat: f64,
    lon: f64,
}

/// The schema of [`Point`], supplied by hand.
pub(crate) struct PointSchema;

impl SuppliedSchema for PointSchema {
    type Value = Point;
    fn json_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "lat": {"type": "number", "minimum": -90, "maximum": 90},
                "lon": {"type": "number", "minimum": -180, "maximum": 180}
            },
            "required": ["lat", "lon"],
            "additionalProperties": false
        })
    }
}

#[agent_schema]
pub(crate) struct Route {
    /// Where to start.
    pub from: Supplied<PointSchema>,
    /// A label.
    #[agent_schema(unbounded)]
    pub label: String,
}

/// A map.
pub(crate) struct Map;

/// A map.
#[agent_component(type = "test.map")]
impl Map {
    /// Centers on a point.
    #[action(effect = "local-state")]
    fn center(&self, input: Supplied<PointSchema>) -> Supplied<PointSchema> {
        input
    }

    /// Plans a route.
    #[action(effect = "local-state")]
    fn route(&self, input: Route) -> f64 {
        input.from.0.lat
    }
}

#[tokio::test]
async fn as_schema_002_supplied_schema_is_the_contract_and_validates_inputs() {
    let contract = Map::contract().checked().unwrap();
    let center = contract.capability("center").unwrap();
    assert_eq!(
        **center.input_schema().unwrap().json(),
        PointSchema::json_schema()
    );
    let route = contract
        .capability("route")
        .unwrap()
        .input_schema()
        .unwrap()
        .json();
    assert_eq!(
        route["properties"]["from"]["properties"]["lat"]["maximum"],
        90
    );

    let registry = registry();
    let _mounted = registry.mount(Arc::new(Map)).unwrap();
    let centered = call(
        &registry,
        Invocation::new("view:test.map.center").input(json!({"lat": 48.1, "lon": 11.5})),
    )
    .await;
    assert_eq!(centered.output(), Some(&json!({"lat": 48.1, "lon": 11.5})));
    let out_of_range = call(
        &registry,
        Invocation::new("view:test.map.center").input(json!({"lat": 200, "lon": 11.5, "x": 1})),
    )
    .await;
    assert_eq!(code(&out_of_range), Some(ErrorCode::InvalidInput));
    let paths: Vec<String> = out_of_range
        .error()
        .unwrap()
        .detail("issues")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|issue| issue["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(paths, ["/lat", "/x"]);
    let nested = call(
        &registry,
        Invocation::new("view:test.map.route").input(json!({"from": {"lat": 1}, "label": "home"})),
    )
    .await;
    assert_eq!(code(&nested), Some(ErrorCode::InvalidInput));
}

#[test]
fn as_schema_002_supplied_schema_outside_the_subset_is_refused_at_registration() {
    let err = Loose::contract().checked().unwrap_err();
    assert_eq!(err.kind(), DefinitionErrorKind::UnsupportedSchema);
    assert!(err.to_string().contains("`not`"), "{err}");
    let registry = registry();
    let refused = registry.mount(Arc::new(Loose)).unwrap_err();
    assert!(
        matches!(refused, MountError::Definition(ref e) if e.kind() == DefinitionErrorKind::UnsupportedSchema),
        "{refused}"
    );
}

#[test]
fn as_schema_002_check_supplied_is_the_registration_check() {
    let limits = SchemaLimits::default();
    let validator = check_supplied(PointSchema::json_schema(), &limits).unwrap();
    assert!(validator.validate(&json!({"lat": 0, "lon": 0})).is_empty());
    assert_eq!(validator.validate(&json!({"lat": -91, "lon": 0})).len(), 1);
    let refused = check_supplied(NotSchema::json_schema(), &limits).unwrap_err();
    assert_eq!(refused.keyword(), "not");
    assert!(check_supplied(json!("not a schema"), &limits).is_err());
}
