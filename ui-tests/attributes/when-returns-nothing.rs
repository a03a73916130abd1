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
    fn has_rows(&self) {}

    /// Clears the rows.
    #[action(effect = "local-state", when = has_rows)]
    fn clear(&self) {}
}

fn main() {}
