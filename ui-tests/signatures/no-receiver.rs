use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// The row count.
    #[observation]
    fn count() -> u32 {
        0
    }
}

fn main() {}
