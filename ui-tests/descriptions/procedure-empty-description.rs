use agent_surface::prelude::*;


#[agent_procedure(id = "domain:devices.disable", effect = "destructive", description = "  ")]
pub struct DisableDevices {
    /// The devices.
    pub ids: Vec<String>,
}

fn main() {}
