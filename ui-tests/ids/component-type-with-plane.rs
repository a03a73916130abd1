use agent_surface::prelude::*;

pub struct Table;

/// A table.
#[agent_component(type = "view:devices.table")]
impl Table {
    /// The row count.
    #[observation]
    fn count(&self) -> usize {
        0
    }
}

fn main() {}
