use agent_surface::prelude::*;

/// A level.
#[agent_schema]
pub struct Level {
    /// The value.
    #[serde(borrow)]
    pub value: u32,
}

fn main() {}
