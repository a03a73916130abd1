//! `#[agent_schema]` on the shapes the subset supports.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use agent_surface::prelude::*;
use serde_json::Value;

#[agent_schema]
#[derive(Default)]
pub enum Status {
    #[default]
    Online,
    Offline,
    Disabled,
}

#[agent_schema]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Filter {
    /// By status.
    ByStatus { status: Status },
    /// By city.
    ByCity { city_name: Option<String> },
}

#[agent_schema]
pub struct Page<T> {
    /// Items.
    pub items: Vec<T>,
    /// Total.
    pub total: u64,
}

#[agent_schema(input)]
pub struct Search {
    /// Query.
    #[schemars(length(min = 1, max = 64))]
    pub query: String,
    /// Filters.
    #[serde(default)]
    #[agent_schema(unbounded)] pub filters: Vec<Filter>,
    /// Tags.
    #[agent_schema(unbounded)] pub tags: BTreeSet<String>,
    /// Free-form extras.
    #[agent_schema(unbounded)] pub extra: BTreeMap<String, Value>,
    /// A pair of the same type.
    pub range: Option<(u16, u16)>,
    /// Fixed size.
    pub rgb: [u8; 3],
    /// Queue.
    #[agent_schema(unbounded)] pub queue: VecDeque<i32>,
    /// Boxed.
    pub boxed: Box<Status>,
    /// Skipped by serde: not part of the schema.
    #[serde(skip)]
    pub cache: Option<std::time::Instant>,
}

#[agent_schema(output)]
pub struct Label {
    /// Static text.
    pub text: &'static str,
}

#[agent_schema(allow_unknown_fields)]
pub struct Loose {
    /// Anything else is ignored.
    pub a: u8,
}

#[agent_schema]
pub struct Newtype(pub String);

pub struct Devices;

/// Devices.
#[agent_component(type = "devices.search")]
impl Devices {
    /// Search.
    #[action(effect = "local-state")]
    fn search(&self, input: Search) -> Page<String> {
        Page { items: vec![input.query], total: 1 }
    }

    /// A label.
    #[observation]
    fn label(&self) -> Label {
        Label { text: "x" }
    }

    /// Loose input.
    #[action(effect = "local-state")]
    fn loose(&self, input: Loose) -> Newtype {
        Newtype(input.a.to_string())
    }
}

fn main() {
    let contract = Devices::contract().checked().expect("valid contract");
    let search = contract.capability("search").unwrap().input_schema().unwrap().json();
    assert_eq!(search["additionalProperties"], false);
    assert!(search["properties"].get("cache").is_none());
    let loose = contract.capability("loose").unwrap().input_schema().unwrap().json();
    assert!(loose.get("additionalProperties").is_none());
}
