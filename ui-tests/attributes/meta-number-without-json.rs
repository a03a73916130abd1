use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear.
    #[action(effect = "local-state", meta(scale = 1e999, offset = 18446744073709551616))]
    fn clear(&self) {}
}

fn main() {}
