use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Default for Table {
    fn default() -> Self {
        Table
    }
}

fn main() {}
