use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear the selection.
    #[action(effect = "local-state", confirmation = "always", audit = "verbose")]
    fn clear(&self) {}
}

fn main() {}
