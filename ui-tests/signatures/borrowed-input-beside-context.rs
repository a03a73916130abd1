use agent_surface::prelude::*;

/// Rows.
#[agent_schema]
pub struct Rows {
    /// Row ids.
    #[schemars(length(max = 10), inner(length(max = 8)))]
    pub ids: Vec<String>,
}

pub struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Selects rows.
    #[action(effect = "local-state")]
    fn select(&self, input: &Rows, ctx: &ActionContext) -> usize {
        let _ = ctx;
        input.ids.len()
    }
}

fn main() {}
