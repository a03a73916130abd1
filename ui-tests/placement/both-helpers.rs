use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Both.
    #[observation]
    #[action(effect = "local-state")]
    fn both(&self) -> u32 {
        0
    }
}

fn main() {}
