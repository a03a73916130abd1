use agent_surface::prelude::*;

/// A page of rows.
#[agent_schema]
pub struct Page {
    /// The page number.
    pub page: u32,
    /// The rows.
    #[serde(flatten)]
    pub items: Vec<String>,
}

fn main() {}
