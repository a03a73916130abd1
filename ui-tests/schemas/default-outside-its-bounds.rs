// A field read with `#[serde(default)]` whose type's default its own
// bounds refuse: leaving it out would hand the handler a value the schema
// says cannot be.
use agent_surface::prelude::*;

/// A page request.
#[agent_schema]
pub struct Page {
    /// Page size, 1 to 10.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub size: u32,
    /// Ids, at least one.
    #[serde(default)]
    #[schemars(length(min = 1, max = 5), inner(length(max = 8)))]
    pub ids: Vec<String>,
    /// An offset from 0: its default is within bounds.
    #[serde(default)]
    #[schemars(range(max = 1000))]
    pub offset: u32,
}

fn main() {}
