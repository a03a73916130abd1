use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Turn it on.
    #[action(effect = "local-state", queue_depth = -1)]
    fn on(&self) {}
}

fn main() {}
