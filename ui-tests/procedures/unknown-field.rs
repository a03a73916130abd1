use agent_surface::prelude::*;

/// Disable devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    #[agent_schema(unbounded)] pub device_ids: Vec<String>,
}

fn main() {
    let _ = ProcedureRef::<DisableDevices>::new()
        .bind(DisableDevices::fields().devices, Vec::new);
}
