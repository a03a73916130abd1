use agent_surface::prelude::*;

#[agent_schema(output, output = false)]
pub struct Status {
    /// Whether the device is online.
    pub online: bool,
}

fn main() {}
