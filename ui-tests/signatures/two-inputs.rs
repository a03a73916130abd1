use agent_surface::prelude::*;

#[agent_schema]
pub struct Ids {
    /// Ids.
    pub ids: Vec<String>,
}

#[agent_schema]
pub struct Mode {
    /// Mode.
    pub mode: String,
}

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Select rows.
    #[action(effect = "local-state")]
    fn select(&self, _ids: Ids, _mode: Mode) {}
}

fn main() {}
