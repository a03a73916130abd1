use agent_surface::prelude::*;

/// A table.
#[agent_component(type = "demo.table")]
impl Table {
    /// The rows.
    #[observation]
    fn rows(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The same table, annotated a second time: one type has one annotated
/// impl block (merge the two).
#[agent_component(type = "demo.table")]
impl Table {
    /// Clears the rows.
    #[action(effect = "local-state")]
    fn clear(&self) {}
}

struct Table;

fn main() {}
