use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear.
    #[action(effect = "local-state")]
    fn clear(&self, _ctx: &mut ActionContext) {}
}

fn main() {}
