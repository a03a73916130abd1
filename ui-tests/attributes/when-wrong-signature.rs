use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear the selection.
    #[action(effect = "local-state", when = selected_count)]
    fn clear(&self) {}

    fn selected_count(&self) -> usize {
        0
    }
}

fn main() {}
