use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear.
    #[action(effect = "local-state",, idempotent)]
    fn clear(&self) {}
}

fn main() {}
