use agent_surface::prelude::*;

struct Row;

/// A row.
#[agent_component(type = "devices.row", parent(type = "devices.table", type = "devices.grid"))]
impl Row {
    /// Whether the row is selected.
    #[observation(name = "selected", name = "isSelected", meta(unit = "bool", unit = "flag"))]
    fn selected(&self) -> bool {
        true
    }
}

fn main() {}
