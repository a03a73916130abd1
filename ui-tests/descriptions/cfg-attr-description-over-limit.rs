use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    #[cfg_attr(all(), doc = include_str!("long-description.md"))]
    #[action(effect = "local-state")]
    fn on(&self) {}
}

fn main() {}
