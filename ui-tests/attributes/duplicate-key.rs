use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table", type = "devices.grid")]
impl Table {
    /// Clear.
    #[action(effect = "local-state", idempotent, idempotent = false)]
    fn clear(&self) {}
}

fn main() {}
