use agent_surface::prelude::*;

/// Disables devices.
#[agent_procedure(id = "domain:devices.disable", effect = "local-state", confirmation = "never")]
pub struct DisableDevices {
    /// The devices.
    pub ids: Vec<String>,
}

/// Uses the type, its fields and its contract: no further errors.
pub fn uses() {
    let fields: DisableDevicesFields = DisableDevices::fields();
    let _ = fields.ids;
    let _ = <DisableDevices as agent_surface::procedure::Procedure>::contract;
}

fn main() {}
