use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    #[observation]
    fn read_state(&self) -> u32 {
        0
    }
}

fn main() {}
