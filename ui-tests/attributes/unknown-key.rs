use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table", priorty = 3)]
impl Table {
    /// Clear.
    #[action(efect = "local-state")]
    fn clear(&self) {}
}

fn main() {}
