use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table", priority = 5i32)]
impl Table {
    /// Clear.
    #[action(effect = "local-state", meta(tiny = 1e-400))]
    fn clear(&self) {}
}

fn main() {}
