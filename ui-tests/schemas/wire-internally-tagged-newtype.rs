use agent_surface::prelude::*;

/// A filter.
#[agent_schema]
#[serde(tag = "kind")]
pub enum Filter {
    /// By name.
    Name(String),
    /// By city.
    City {
        /// The city.
        city: String,
    },
}

fn main() {}
