use agent_surface::prelude::*;

/// Not a procedure.
pub struct Plain;

/// The devices table.
#[agent_component(type = "devices.table")]
#[reference(Plain)]
impl Table {
    /// Visible rows.
    #[observation]
    fn rows(&self) -> u32 {
        0
    }
}

struct Table;

fn main() {}
