use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Set the level.
    #[action(effect = "local-state")]
    fn set(&self, (level, _): (u8, u8)) {
        let _ = level;
    }
}

fn main() {}
