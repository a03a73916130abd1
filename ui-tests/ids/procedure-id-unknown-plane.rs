use agent_surface::prelude::*;

/// Disables devices.
#[agent_procedure(id = "server:devices.disable", effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    pub ids: Vec<String>,
}

fn main() {}
