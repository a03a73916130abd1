use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Refreshes the rows.
    #[observation]
    fn refresh(&self) -> () {}
}

fn main() {}
