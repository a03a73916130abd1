use agent_surface::prelude::*;

/// A status.
#[agent_schema]
pub struct Status {
    /// Whether the device is online.
    #[serde(default = 5)]
    pub online: bool,
}

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Set it.
    #[action(effect = "local-state")]
    fn set(&self, input: Status) -> Status {
        input
    }
}

fn main() {}
