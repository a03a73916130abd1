use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table", policies = ["authenticated"])]
impl Table {
    /// Clear.
    #[action(effect = "local-state", policies = [42])]
    fn clear(&self) {}
}

fn main() {}
