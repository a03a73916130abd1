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
    /// Refreshes the rows.
    #[action(effect = "local-state")]
    fn refresh(&self) {}

    /// Clears the rows.
    #[action(effect = "local-state", when = refresh)]
    fn clear(&self) {}
}

fn main() {}
