use agent_surface::prelude::*;

#[agent_schema]
pub struct Rows {
    /// Row ids.
    pub ids: Vec<String>,
}

pub struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clears the rows.
    #[action(effect = "local-state", idempotent = )]
    fn clear(&self) {}
}

fn main() {}
