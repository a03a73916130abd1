use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear.
    #[cfg_attr(all(), action)]
    fn clear(&self) {}
}

fn main() {}
