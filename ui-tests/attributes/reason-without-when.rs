use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear the selection.
    #[action(effect = "local-state", unavailable_reason = "Nothing is selected")]
    fn clear(&self) {}
}

fn main() {}
