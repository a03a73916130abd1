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
    #[observation]
    fn count(&self, ctx: ReadContext) -> usize {
        let _ = ctx;
        0
    }
}

fn main() {}
