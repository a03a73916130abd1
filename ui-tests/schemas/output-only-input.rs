use agent_surface::prelude::*;

#[agent_schema(output)]
pub struct Rows {
    /// Row ids.
    pub ids: Vec<String>,
}

pub struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Selects rows.
    #[action(effect = "local-state")]
    fn select(&self, input: Rows) -> usize {
        input.ids.len()
    }
}

fn main() {}
