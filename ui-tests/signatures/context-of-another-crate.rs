use agent_surface::prelude::*;

#[agent_schema]
pub struct Rows {
    /// Row ids.
    #[agent_schema(unbounded)] pub ids: Vec<String>,
}

pub struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Selects rows.
    #[action(effect = "local-state")]
    fn select(&self, input: Rows, ctx: &web::ReadContext) -> usize {
        let _ = ctx;
        input.ids.len()
    }
}

mod web {
    /// A web framework context.
    pub struct ReadContext;
}

fn main() {}
