use agent_surface::prelude::*;

/// Disables devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
#[agent_schema(output)]
pub struct DisableDevices {
    /// The devices.
    pub ids: Vec<String>,
}

fn main() {}
