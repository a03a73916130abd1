use agent_surface::prelude::*;

#[agent_schema]
pub struct Disabled {
    /// How many devices were disabled.
    pub count: u32,
}

/// Disables devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive", output = Disabled, output = String)]
pub struct DisableDevices {
    /// The devices.
    pub ids: Vec<String>,
}

fn main() {}
