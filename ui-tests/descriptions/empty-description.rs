use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    #[action(effect = "local-state", description = "  ")]
    fn clear(&self) {}
}

fn main() {}
