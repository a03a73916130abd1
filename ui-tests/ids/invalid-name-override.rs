use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Select rows.
    #[action(effect = "local-state", name = "select_rows")]
    fn select(&self) {}
}

fn main() {}
