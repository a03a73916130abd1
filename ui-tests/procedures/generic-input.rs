use agent_surface::prelude::*;

/// Disables devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub struct DisableDevices<T> {
    /// The devices.
    pub ids: Vec<T>,
}

fn main() {}
