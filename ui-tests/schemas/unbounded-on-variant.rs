use agent_surface::prelude::*;

/// A change.
#[agent_schema]
pub enum Change {
    /// A rename.
    #[agent_schema(unbounded)]
    Rename {
        /// The new name.
        name: String,
    },
}

fn main() {}
