//! Wire shapes the checks accept: an optional field skipped when absent, a
//! flattened struct, an internally tagged enum with struct variants, an
//! adjacently tagged one with a newtype variant, bounds that admit values,
//! and a procedure field renamed for deserialization, bound by its wire name.

use agent_surface::prelude::*;
use agent_surface::procedure::ProcedureRef;

/// Paging.
#[agent_schema]
pub struct Paging {
    /// The page.
    #[schemars(range(min = 1, max = 100))]
    pub page: u32,
}

/// A page of rows.
#[agent_schema]
pub struct Page {
    /// The paging.
    #[serde(flatten)]
    pub paging: Paging,
    /// A note, left out when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The text.
    #[schemars(length(min = 1, max = 10), regex(pattern = r"^[a-z]+$"))]
    pub text: String,
}

/// A filter.
#[agent_schema]
#[serde(tag = "kind")]
pub enum Filter {
    /// By city.
    City {
        /// The city.
        city: String,
    },
}

/// A value.
#[agent_schema]
#[serde(tag = "kind", content = "value")]
pub enum Value {
    /// A name.
    Name(String),
}

/// Disable devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    #[serde(rename = "ids")]
    #[agent_schema(unbounded)] pub device_ids: Vec<String>,
}

fn main() {
    let field = DisableDevices::fields().device_ids;
    assert_eq!(field.name(), "ids");
    let _ = ProcedureRef::<DisableDevices>::new().bind(field, Vec::new);
    let page = Page { paging: Paging { page: 2 }, note: None, text: "ab".to_owned() };
    assert_eq!(serde_json::to_value(&page).unwrap(), serde_json::json!({"page": 2, "text": "ab"}));
}
