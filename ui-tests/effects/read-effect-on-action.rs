use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Read the state.
    #[action(effect = "read")]
    fn state(&self) -> u32 {
        0
    }
}

fn main() {}
