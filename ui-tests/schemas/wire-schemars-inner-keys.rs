use agent_surface::prelude::*;

/// Tags.
#[agent_schema]
pub struct Tags {
    /// The tags.
    #[schemars(length(max = 5), inner(lenght(max = 5)))]
    pub tags: Vec<String>,
    /// A code.
    #[schemars(with = 5)]
    pub code: String,
    /// A label.
    #[schemars(length(max = -1))]
    pub label: String,
}

fn main() {}
