use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Select rows.
    #[action(effect = "local-state")]
    fn select_rows(&self) {}

    /// Select rows again.
    #[action(effect = "local-state", name = "selectRows")]
    fn select_more(&self) {}
}

fn main() {}
