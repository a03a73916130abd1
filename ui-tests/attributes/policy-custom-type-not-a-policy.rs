use agent_surface::prelude::*;

struct Table;

/// Not a policy: a plain struct of the user's.
struct Quota;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear.
    #[action(effect = "local-state", policies = [Quota])]
    fn clear(&self) {}
}

fn main() {}
