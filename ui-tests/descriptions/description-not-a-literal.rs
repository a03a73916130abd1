use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    #[action(effect = "local-state", description = concat!("Turn it ", "on."))]
    fn on(&self) {}
}

fn main() {}
