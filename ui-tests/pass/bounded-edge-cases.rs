//! Valid inputs the bounds check must accept: the application's own types
//! named `Value` or `Map`, fields and variants agents never send, a bound
//! under `cfg_attr`, `length(equal)`, an input type named `…Context`, and a
//! context with a named lifetime.

use agent_surface::prelude::*;

/// An amount: the application's own `Value`.
#[agent_schema]
pub struct Value {
    /// How much.
    pub amount: u32,
}

/// A zoom level: the application's own `Map`.
#[agent_schema]
pub struct Map {
    /// The zoom.
    pub zoom: u8,
}

/// A kind of search.
#[agent_schema]
pub enum Kind {
    /// By name.
    Name,
    /// Internal only.
    #[serde(skip_deserializing)]
    Raw(String),
}

/// A search, named like a context but taken by value.
#[agent_schema]
pub struct SearchContext {
    /// The value.
    pub value: Value,
    /// The map.
    pub map: Map,
    /// The kind.
    pub kind: Kind,
    /// A three-letter code.
    #[schemars(length(equal = 3))]
    pub code: String,
    /// A name, bounded under `cfg_attr`.
    #[cfg_attr(all(), schemars(length(max = 30)))]
    pub name: String,
    /// Never read from the agent.
    #[serde(skip)]
    pub cache: String,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Searches.
    #[action(effect = "local-state")]
    fn search(&self, input: SearchContext) -> u32 {
        input.value.amount
    }

    /// Reads.
    #[observation]
    fn read<'a>(&self, ctx: &'a ReadContext) -> usize {
        let _ = ctx;
        1
    }
}

fn main() {
    let contract = Panel::contract().checked().expect("valid contract");
    let schema = contract.capability("search").unwrap().input_schema().unwrap().json().to_string();
    assert!(schema.contains(r#""maxLength":30"#), "{schema}");
}
