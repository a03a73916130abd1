use agent_surface::prelude::*;

/// Rows to pick.
#[agent_schema]
pub struct Pick {
    /// Row ids.
    #[schemars(lenght(max = 5))]
    pub ids: Vec<String>,
    /// A label.
    #[schemars(length(max = "five"))]
    pub label: String,
    /// A code.
    #[schemars(regex = 5)]
    pub code: String,
    /// A note.
    #[schemars(titel = "x")]
    pub note: String,
}

pub struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Picks rows.
    #[action(effect = "local-state")]
    fn pick(&self, input: Pick) -> usize {
        input.ids.len()
    }
}

fn main() {}
