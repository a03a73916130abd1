use agent_surface::prelude::*;
use agent_surface::procedure::Procedure;

/// The result.
#[agent_schema(output)]
pub struct Disabled {
    /// How many changed.
    pub disabled: u32,
}

/// Disable devices; they stop reporting until re-enabled.
#[agent_procedure(
    id = "domain:devices.disable",
    effect = "destructive",
    confirmation = "optional",
    audit = "full",
    output = Disabled,
    timeout = "45s"
)]
pub struct DisableDevices {
    /// The devices.
    #[schemars(length(min = 1))]
    #[agent_schema(unbounded)] pub device_ids: Vec<String>,
    /// Why.
    #[serde(rename = "why")]
    #[agent_schema(unbounded)] pub reason: Option<String>,
    /// Not on the wire.
    #[serde(skip)]
    pub local: bool,
}

/// Export a report.
#[agent_procedure(id = "domain:reports.export", effect = "server-query", idempotent, description = "Exports a report.")]
#[serde(rename_all = "snake_case")]
pub struct Export {
    /// The report.
    #[agent_schema(unbounded)] pub report_id: String,
}

fn main() {
    let fields = DisableDevices::fields();
    assert_eq!(fields.device_ids.name(), "deviceIds");
    assert_eq!(fields.reason.name(), "why");
    assert_eq!(Export::fields().report_id.name(), "report_id");
    let contract = DisableDevices::contract().checked().unwrap();
    assert_eq!(contract.confirmation(), Confirmation::Optional);
    assert_eq!(contract.timeout_ms(), Some(45_000));
    assert!(contract.output_schema().is_some());
    let export = Export::contract().checked().unwrap();
    assert!(export.idempotent());
    assert_eq!(&**export.description(), "Exports a report.");
    let _ = ProcedureRef::<DisableDevices>::new()
        .bind(fields.device_ids, Vec::new)
        .bind_overridable(fields.reason, || Some("cleanup".to_owned()));
}
