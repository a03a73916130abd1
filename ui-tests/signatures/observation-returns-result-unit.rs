use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Checks the rows.
    #[observation]
    fn check(&self) -> Result<(), ActionError> {
        Ok(())
    }
}

fn main() {}
