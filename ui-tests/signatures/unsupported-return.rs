use agent_surface::prelude::*;

struct Handle;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Open.
    #[action(effect = "local-state")]
    fn open(&self) -> Result<Handle, String> {
        Ok(Handle)
    }
}

fn main() {}
