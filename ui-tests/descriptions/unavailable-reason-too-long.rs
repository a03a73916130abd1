use agent_surface::prelude::*;

pub struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    fn loaded(&self) -> bool {
        true
    }

    /// Clears the rows.
    #[action(effect = "local-state", when = loaded, unavailable_reason = "Available once rows are loaded and the backend has answered the last query, the backend has answered the last query, the backend has answered the last query, the backend has answered the last query, the backend has answered the last query, the backend has answered the last query, the backend has answered the last query, the backend has answered the last query, ")]
    fn clear(&self) {}
}

fn main() {}
