use agent_surface::prelude::*;

#[agent_procedure(idd = "domain:devices.disable")]
pub struct DisableDevices {
    /// The devices.
    pub device_ids: Vec<String>,
}

/// Export.
#[agent_procedure(id = "domain:reports.export")]
pub struct Export {
    /// The report.
    pub report_id: String,
}

/// Archive.
#[agent_procedure(id = "domain:reports.archive", effect = "server-mutation", audit = "everything")]
pub struct Archive {
    /// The report.
    pub report_id: String,
}

fn main() {}
