use agent_surface::prelude::*;

/// Disable devices.
#[agent_procedure(id = "view:devices.table.disable", effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    pub device_ids: Vec<String>,
}

fn main() {}
