use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Rows.
    #[observation = "rows"]
    fn rows(&self) -> u32 {
        1
    }
}

fn main() {}
