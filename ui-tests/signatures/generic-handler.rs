use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Anything.
    #[action(effect = "local-state")]
    fn set<T: AgentInput>(&self, _input: T) {}
}

fn main() {}
