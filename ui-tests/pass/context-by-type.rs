//! Context parameters are recognised by their type, wherever they stand and
//! whatever their name; a precondition gets the context when it declares it.

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
    fn visible(&self, input: &Rows, _: &agent_surface::ReadContext) -> Result<(), PreconditionFailure> {
        if input.ids.is_empty() {
            return Err(PreconditionFailure::new("Select at least one row"));
        }
        Ok(())
    }

    fn small(&self, rows: &Rows) -> Result<(), PreconditionFailure> {
        if rows.ids.len() > 10 {
            return Err(PreconditionFailure::new("Select at most ten rows"));
        }
        Ok(())
    }

    /// Selects rows.
    #[action(effect = "local-state", precondition = visible)]
    fn select(&self, request: &agent_surface::ActionContext, rows: Rows) -> usize {
        let _ = request.invocation_id();
        rows.ids.len()
    }

    /// Highlights rows.
    #[action(effect = "local-state", precondition = small)]
    fn highlight(&self, rows: Rows) -> usize {
        rows.ids.len()
    }
}

fn main() {
    let contract = Table::contract().checked().expect("valid contract");
    assert!(contract.capability("select").is_some());
    assert!(contract.capability("highlight").is_some());
}
