// `Procedure` is sealed: only `#[agent_procedure]` implements it; a
// hand-written impl through the public API does not compile.
use agent_surface::prelude::*;

/// The input of a hand-built procedure.
#[agent_schema]
pub struct Forged {
    /// A device.
    pub device_id: String,
}

impl agent_surface::procedure::Procedure for Forged {
    type Fields = ();
    fn contract() -> &'static agent_surface::procedure::ProcedureContract {
        unimplemented!()
    }
    fn fields() {}
}

fn main() {}
