use agent_surface::prelude::*;

pub struct Plain {
    pub ids: Vec<String>,
}

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Select.
    #[action(effect = "local-state")]
    fn select(&self, _input: Plain) {}
}

fn main() {}
