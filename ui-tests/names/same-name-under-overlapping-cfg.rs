use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Turn it on.
    #[cfg(unix)]
    #[action(effect = "local-state")]
    fn on(&self) {}

    /// Turn it on, again.
    #[cfg(debug_assertions)]
    #[action(effect = "local-state", name = "on")]
    fn on_again(&self) {}
}

fn main() {}
