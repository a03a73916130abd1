// `Procedure` is sealed: only `#[agent_procedure]` implements it. A
// hand-written impl through the public API does not compile, even one that
// borrows a real procedure's contract: the seal's type is not public API.
use agent_surface::prelude::*;

/// Disables devices.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub struct DisableDevices {
    /// The devices.
    #[agent_schema(unbounded)] pub ids: Vec<String>,
}

/// The input of a hand-built procedure.
#[agent_schema]
pub struct Forged {
    /// A device.
    pub device_id: String,
}

impl agent_surface::procedure::Procedure for Forged {
    type Fields = ();
    fn contract() -> &'static agent_surface::procedure::ProcedureContract {
        <DisableDevices as agent_surface::procedure::Procedure>::contract()
    }
    fn fields() {}
    fn __sealed(_: ()) {}
}

fn main() {}
