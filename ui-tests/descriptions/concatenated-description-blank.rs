use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    #[doc = concat!("  ", "\n")]
    #[action(effect = "local-state")]
    fn on(&self) {}
}

fn main() {}
