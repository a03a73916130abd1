use agent_surface::prelude::*;

/// Disable devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    #[agent_schema(unbounded)] pub device_ids: Vec<String>,
}

/// Export.
#[agent_procedure(id = "domain:reports.export", effect = "server-mutation")]
pub struct Export {
    /// The report.
    #[agent_schema(unbounded)] pub report_id: String,
}

fn main() {
    let _ = ProcedureRef::<DisableDevices>::new().bind(DisableDevices::fields().device_ids, || 3_u32);
    // A field of another procedure.
    let _ = ProcedureRef::<DisableDevices>::new().bind(Export::fields().report_id, String::new);
}
