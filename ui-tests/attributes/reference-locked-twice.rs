use agent_surface::prelude::*;

/// Disables devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    #[schemars(length(max = 10), inner(length(max = 20)))]
    pub device_ids: Vec<String>,
}

/// A table.
pub struct Table;

/// A table.
#[agent_component(type = "ui.table")]
#[reference(DisableDevices, locked = [device_ids, device_ids])]
impl Table {
    /// Rows.
    #[observation]
    fn rows(&self) -> u32 {
        0
    }
}

fn main() {}
