use agent_surface::prelude::*;

/// Disable devices.
#[agent_procedure(effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    #[schemars(length(max = 10), inner(length(max = 64)))]
    pub device_ids: Vec<String>,
}

fn main() {}
