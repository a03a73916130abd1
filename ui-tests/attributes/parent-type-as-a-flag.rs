use agent_surface::prelude::*;

/// A row.
pub struct Row;

/// A row of a table.
#[agent_component(type = "ui.row", parent(type))]
impl Row {
    /// Its value.
    #[observation]
    fn value(&self) -> u32 {
        1
    }
}

fn main() {}
