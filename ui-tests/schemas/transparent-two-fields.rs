use agent_surface::prelude::*;

/// A size.
#[agent_schema]
#[serde(transparent)]
pub struct Size {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

fn main() {}
