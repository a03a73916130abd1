use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Rename.
    #[action(effect = "local-state")]
    fn rename(&self, _name: String) {}
}

fn main() {}
