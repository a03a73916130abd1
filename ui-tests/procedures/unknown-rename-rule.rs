use agent_surface::prelude::*;

/// Disable devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
#[serde(rename_all = "camel")]
pub struct DisableDevices {
    /// The devices.
    #[schemars(length(max = 10), inner(length(max = 64)))]
    pub device_ids: Vec<String>,
}

fn main() {}
