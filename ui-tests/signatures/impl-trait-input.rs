use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Set the level.
    #[action(effect = "local-state")]
    fn set(&self, input: impl serde::de::DeserializeOwned) {
        let _ = input;
    }
}

fn main() {}
