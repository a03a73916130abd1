use agent_surface::prelude::*;

/// An operation.
#[agent_schema]
#[serde(tag = "kind")]
pub enum Op {
    /// Move.
    Move {
        /// How far.
        #[serde(rename = "kind")]
        distance: u32,
    },
}

fn main() {}
