use agent_surface::prelude::*;

/// Disable devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    #[agent_schema(unbounded)] pub device_ids: Vec<String>,
}

/// The devices table.
#[reference(DisableDevices)]
#[agent_component(type = "devices.table")]
impl Table {
    /// Visible rows.
    #[observation]
    fn rows(&self) -> u32 {
        0
    }
}

struct Table;

fn main() {}
