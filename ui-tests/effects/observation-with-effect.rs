use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Read the state.
    #[observation(effect = "local-state", confirmation = "required")]
    fn state(&self) -> u32 {
        0
    }
}

fn main() {}
