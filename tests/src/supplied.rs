//! A component whose caller-supplied schema lies outside the subset: its
//! contract fails to check (AS-SCHEMA-002).

use agent_surface::prelude::*;
use agent_surface::schema::{Supplied, SuppliedSchema};
use serde_json::{Value, json};

/// A supplied schema outside the subset (`not`).
pub struct NotSchema;

impl SuppliedSchema for NotSchema {
    type Value = Value;
    fn json_schema() -> Value {
        json!({"not": {"type": "string"}})
    }
}

/// A component with a supplied schema outside the subset.
pub struct Loose;

/// Loose.
#[agent_component(type = "fixtures.loose")]
impl Loose {
    /// Reads anything.
    #[observation]
    fn anything(&self) -> Supplied<NotSchema> {
        Supplied(json!(1))
    }
}
