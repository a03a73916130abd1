use agent_surface::prelude::*;


#[agent_procedure(id = "domain:devices.disable", effect = "destructive", description = "Disables the devices and then waits for the backend to confirm it, then waits for the backend to confirm it, then waits for the backend to confirm it, then waits for the backend to confirm it, then waits for the backend to confirm it, then waits for the backend to confirm it, then waits for the backend to confirm it, then waits for the backend to confirm it, ")]
pub struct DisableDevices {
    /// The devices.
    pub ids: Vec<String>,
}

fn main() {}
