use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Reads nothing.
    #[observation]
    fn nothing(&self) {}
}

fn main() {}
