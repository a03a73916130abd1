use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Disable the selected devices.
    #[action(effect = "destructive")]
    fn disable(&self) {}
}

fn main() {}
