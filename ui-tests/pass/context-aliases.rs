//! A context is recognised by its place and checked by its trait, not by
//! its name: aliases and renamed imports of `ActionContext` and
//! `ReadContext` work in handlers and preconditions.

use agent_surface::ActionContext as Here;
use agent_surface::prelude::*;

/// The call's context, under a name of the application's.
type Env = agent_surface::ReadContext;

/// Rows to pick.
#[agent_schema]
pub struct Pick {
    /// Row ids.
    #[schemars(length(max = 10), inner(length(max = 8)))]
    pub ids: Vec<String>,
}

pub struct Table;

/// A table.
#[agent_component(type = "demo.table")]
impl Table {
    /// Picks rows.
    #[action(effect = "local-state", precondition = known)]
    fn pick(&self, input: Pick, call: &Here) -> usize {
        let _ = call.consumer();
        input.ids.len()
    }

    /// Counts rows.
    #[observation]
    fn count(&self, env: &Env) -> usize {
        let _ = env.consumer();
        3
    }

    fn known(&self, input: &Pick, env: &Env) -> Result<(), PreconditionFailure> {
        let _ = env.consumer();
        if input.ids.is_empty() {
            Err(PreconditionFailure::new("pick at least one row"))
        } else {
            Ok(())
        }
    }
}

fn main() {
    let contract = Table::contract().checked().expect("valid contract");
    assert!(contract.capability("pick").unwrap().input_schema().is_some());
    assert!(contract.capability("count").unwrap().input_schema().is_none());
}
