use agent_surface::prelude::*;

/// A change.
#[agent_schema]
#[serde(tag = "kind", content = "kind")]
pub enum Change {
    /// Rename.
    Rename(String),
    /// Remove.
    Remove(u32),
}

fn main() {}
