use agent_surface::prelude::*;

/// An operation.
#[agent_schema]
#[serde(tag = "kind")]
pub enum Op {
    /// Move.
    Move { kind: u32 },
}

fn main() {}
