use agent_surface::prelude::*;

#[agent_schema]
#[agent_schema]
pub struct Status {
    /// Whether the device is online.
    pub online: bool,
}

fn main() {}
