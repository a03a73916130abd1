use agent_surface::prelude::*;

/// Disable devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub enum DisableDevices {
    /// Everything.
    All,
    /// Some.
    Some(Vec<String>),
}

fn main() {}
