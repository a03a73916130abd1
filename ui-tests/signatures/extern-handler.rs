use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Turn it on.
    #[action(effect = "local-state")]
    extern "C" fn on(&self) {}
}

fn main() {}
