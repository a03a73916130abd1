use agent_surface::prelude::*;

/// A mode.
#[agent_schema]
#[serde(default)]
pub enum Mode {
    /// Off.
    Off,
    /// On.
    On,
}

fn main() {}
