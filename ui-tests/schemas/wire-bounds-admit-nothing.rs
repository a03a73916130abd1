use agent_surface::prelude::*;

/// A search.
#[agent_schema]
pub struct Search {
    /// How many.
    #[schemars(range(min = 10, max = 1))]
    pub limit: u32,
    /// The text.
    #[schemars(length(min = 5, max = 2))]
    pub text: String,
}

fn main() {}
