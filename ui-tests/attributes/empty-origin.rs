use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp", origin = "")]
impl Lamp {
    /// Turn it on.
    #[action(effect = "local-state")]
    fn on(&self) {}
}

fn main() {}
