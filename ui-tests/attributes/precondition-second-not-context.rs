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
    fn visible(&self, input: &Rows, strict: &bool) -> Result<(), PreconditionFailure> {
        let _ = (input, strict);
        Ok(())
    }

    /// Selects rows.
    #[action(effect = "local-state", precondition = visible)]
    fn select(&self, input: Rows) -> usize {
        input.ids.len()
    }
}

fn main() {}
