use agent_surface::prelude::*;

/// Disables devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive", id = "domain:devices.off")]
pub struct DisableDevices {
    /// The devices.
    pub ids: Vec<String>,
}

fn main() {}
