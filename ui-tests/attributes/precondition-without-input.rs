use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear the selection.
    #[action(effect = "local-state", precondition = check)]
    fn clear(&self) {}

    fn check(&self) -> bool {
        true
    }
}

fn main() {}
