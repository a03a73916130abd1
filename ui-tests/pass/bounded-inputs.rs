//! Every string and list an agent can send is bounded, or declared
//! unbounded: nested types, recursive types, generic types, free-form JSON
//! and output types (never checked: agents never send them) all compile,
//! and the bounds are in the published schemas.

use agent_surface::prelude::*;

/// One line of an order.
#[agent_schema]
pub struct Line {
    /// The product.
    #[schemars(length(min = 1, max = 64))]
    pub product: String,
    /// A note.
    #[schemars(length(max = 200))]
    pub note: Option<String>,
}

/// A folder tree: recursive, checked to a fixed depth.
#[agent_schema]
pub struct Folder {
    /// The name.
    #[schemars(length(max = 32))]
    pub name: String,
    /// Sub-folders.
    #[schemars(length(max = 8))]
    pub children: Vec<Folder>,
}

/// A page of items, generic.
#[agent_schema]
pub struct Page<T> {
    /// The items.
    #[schemars(length(max = 20))]
    pub items: Vec<T>,
}

/// An order.
#[agent_schema]
pub struct Order {
    /// The lines.
    #[schemars(length(max = 50))]
    pub lines: Vec<Line>,
    /// Tags.
    #[schemars(length(max = 5), inner(length(max = 16)))]
    pub tags: Vec<String>,
    /// Fixed-size codes, each bounded.
    #[schemars(inner(length(max = 4)))]
    pub codes: [String; 2],
    /// The folders.
    pub folders: Page<Folder>,
    /// Free-form settings, left to the registry's input limit.
    #[agent_schema(unbounded)]
    pub settings: serde_json::Value,
    /// Never read from the agent.
    #[serde(skip)]
    pub cache: Vec<String>,
}

/// A raw import, whose every field is left to the registry's input limit.
#[agent_schema(unbounded)]
pub struct Import {
    /// The rows.
    pub rows: Vec<String>,
}

/// A receipt: an output, never sent by agents, so never checked.
#[agent_schema(output)]
pub struct Receipt {
    /// The text.
    pub text: String,
}

pub struct Shop;

/// A shop.
#[agent_component(type = "demo.shop")]
impl Shop {
    /// Places an order.
    #[action(effect = "local-state")]
    fn order(&self, input: Order) -> Receipt {
        Receipt { text: format!("{} lines", input.lines.len()) }
    }

    /// Imports rows.
    #[action(effect = "local-state")]
    fn import(&self, input: Import) -> usize {
        input.rows.len()
    }
}

fn main() {
    let contract = Shop::contract().checked().expect("valid contract");
    let schema = contract.capability("order").unwrap().input_schema().unwrap().json().to_string();
    for bound in [r#""maxItems":50"#, r#""maxLength":16"#, r#""maxLength":4"#, r#""maxItems":8"#] {
        assert!(schema.contains(bound), "{bound} missing from {schema}");
    }
}
