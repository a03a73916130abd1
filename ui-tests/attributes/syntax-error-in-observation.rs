use agent_surface::prelude::*;

#[agent_schema]
pub struct Rows {
    /// Row ids.
    pub ids: Vec<String>,
}

pub struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// The row count.
    #[observation(name = "count", timeout = 5s)]
    fn count(&self) -> usize {
        0
    }
}

fn main() {}
