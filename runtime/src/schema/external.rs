//! Caller-supplied JSON Schemas: the path for a type that cannot carry
//! `#[agent_schema]` (a type of another crate, or one whose serde shape is
//! written by hand), like the specification's `fromJsonSchema`.
//!
//! Implement [`SuppliedSchema`] on a marker type of your own, naming the
//! value type and giving its schema; then use [`Supplied<Marker>`] wherever
//! a schema type goes (a field, an action input, a return value). The
//! schema is checked against the subset when the contract is checked (by the
//! test `#[agent_component]` generates, and again at registration, which
//! refuses it with `UNSUPPORTED_SCHEMA`), and every input is validated
//! against it by the runtime validator before the value is deserialized.
//!
//! ```
//! use agent_surface::prelude::*;
//! use agent_surface::schema::{Supplied, SuppliedSchema};
//! use serde_json::{Value, json};
//!
//! /// A coordinate from a geometry crate we cannot annotate.
//! #[derive(serde::Serialize, serde::Deserialize)]
//! pub struct Point { pub lat: f64, pub lon: f64 }
//!
//! /// The schema of [`Point`].
//! pub struct PointSchema;
//!
//! impl SuppliedSchema for PointSchema {
//!     type Value = Point;
//!     fn json_schema() -> Value {
//!         json!({
//!             "type": "object",
//!             "properties": {
//!                 "lat": {"type": "number", "minimum": -90, "maximum": 90},
//!                 "lon": {"type": "number", "minimum": -180, "maximum": 180}
//!             },
//!             "required": ["lat", "lon"],
//!             "additionalProperties": false
//!         })
//!     }
//! }
//!
//! pub struct Map;
//!
//! /// A map.
//! #[agent_component(type = "geo.map")]
//! impl Map {
//!     /// Centers the map on a point.
//!     #[action(effect = "local-state")]
//!     fn center(&self, input: Supplied<PointSchema>) -> f64 {
//!         input.0.lat
//!     }
//! }
//!
//! assert!(Map::contract().checked().is_ok());
//! ```

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use super::{CompiledSchema, SchemaError, SchemaLimits};

/// A JSON Schema supplied by hand for [`Value`](SuppliedSchema::Value).
///
/// Implement it on a marker type of your own (so the orphan rule allows it
/// for any value type). The schema must describe exactly what the value's
/// `Serialize`/`Deserialize` produce and accept, inside the subset.
pub trait SuppliedSchema: 'static {
    /// The Rust value the schema describes.
    type Value;

    /// The JSON Schema (draft 2020-12, inside the subset; no `$defs`).
    fn json_schema() -> Value;
}

/// A value whose schema is [`SuppliedSchema::json_schema`]: serializes and
/// deserializes exactly as `S::Value` does.
pub struct Supplied<S: SuppliedSchema>(pub S::Value);

impl<S: SuppliedSchema> Supplied<S> {
    /// The wrapped value.
    pub fn into_inner(self) -> S::Value {
        self.0
    }
}

impl<S: SuppliedSchema> fmt::Debug for Supplied<S>
where
    S::Value: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Supplied").field(&self.0).finish()
    }
}

impl<S: SuppliedSchema> Clone for Supplied<S>
where
    S::Value: Clone,
{
    fn clone(&self) -> Self {
        Supplied(self.0.clone())
    }
}

impl<S: SuppliedSchema> PartialEq for Supplied<S>
where
    S::Value: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<S: SuppliedSchema> serde::Serialize for Supplied<S>
where
    S::Value: serde::Serialize,
{
    fn serialize<Ser: serde::Serializer>(&self, serializer: Ser) -> Result<Ser::Ok, Ser::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, S: SuppliedSchema> serde::Deserialize<'de> for Supplied<S>
where
    S::Value: serde::Deserialize<'de>,
{
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        S::Value::deserialize(deserializer).map(Supplied)
    }
}

impl<S: SuppliedSchema> schemars::JsonSchema for Supplied<S> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(std::any::type_name::<S>())
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // Anything but an object or a boolean is no schema: `false` then,
        // which the subset check reports where it is used.
        schemars::Schema::try_from(S::json_schema()).unwrap_or_else(|_| false.into())
    }
}

#[diagnostic::do_not_recommend]
impl<S: SuppliedSchema> super::AgentSchema for Supplied<S> {}

// A supplied schema states its own bounds.
impl<S: SuppliedSchema, D> super::bounded::Bounded<D> for Supplied<S> {
    const UNBOUNDED: Option<&'static str> = None;
}

#[diagnostic::do_not_recommend]
impl<S: SuppliedSchema> super::AgentInput for Supplied<S> where
    S::Value: serde::de::DeserializeOwned + Send + 'static
{
}

/// Checks a caller-supplied JSON Schema the way registration does
/// (normalized, inside the subset, within `limits`) and compiles its
/// validator: the early check for a [`SuppliedSchema`], e.g. in a unit test.
///
/// ```
/// use agent_surface::schema::{SchemaLimits, check_supplied};
/// use serde_json::json;
///
/// let validator = check_supplied(json!({"type": "string", "format": "uuid"}), &SchemaLimits::default())?;
/// assert!(validator.validate(&json!("123e4567-e89b-12d3-a456-426614174000")).is_empty());
/// assert_eq!(validator.validate(&json!("nope")).len(), 1);
/// let refused = check_supplied(json!({"not": {"type": "string"}}), &SchemaLimits::default());
/// assert_eq!(refused.unwrap_err().keyword(), "not");
/// # Ok::<(), agent_surface::schema::SchemaError>(())
/// ```
pub fn check_supplied(schema: Value, limits: &SchemaLimits) -> Result<CompiledSchema, SchemaError> {
    let schema = super::normalize(schema)?;
    super::check_subset(&schema, limits)?;
    super::compile(&schema)
}
