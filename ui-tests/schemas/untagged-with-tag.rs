use agent_surface::prelude::*;

/// An operation.
#[agent_schema]
#[serde(untagged, tag = "kind")]
pub enum Op {
    /// Move.
    Move { distance: u32 },
}

fn main() {}
