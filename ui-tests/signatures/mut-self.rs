use agent_surface::prelude::*;

struct Table {
    rows: Vec<String>,
}

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear the rows.
    #[action(effect = "local-state")]
    fn clear(&mut self) {
        self.rows.clear();
    }
}

fn main() {}
