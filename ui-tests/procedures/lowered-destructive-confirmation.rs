use agent_surface::prelude::*;

/// Disable devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive", confirmation = "never")]
pub struct DisableDevices {
    /// The devices.
    pub device_ids: Vec<String>,
}

fn main() {}
