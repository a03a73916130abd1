use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// The level.
    #[observation]
    fn level(&self) -> impl serde::Serialize {
        3u8
    }
}

fn main() {}
