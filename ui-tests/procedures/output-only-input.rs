use agent_surface::prelude::*;

/// Disables devices.
#[agent_schema(output)]
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    pub ids: Vec<String>,
}

fn main() {}
