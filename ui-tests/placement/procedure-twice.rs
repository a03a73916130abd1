use agent_surface::prelude::*;

/// Archives a record.
#[agent_procedure(id = "domain:records.archive", effect = "server-mutation")]
#[agent_procedure(id = "domain:records.archive-again", effect = "server-mutation")]
pub struct ArchiveRecord {
    /// The record.
    #[schemars(length(max = 64))]
    pub record_id: String,
}

fn main() {}
