use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// The sorting.
    #[observation]
    fn sort(&self) -> String {
        String::new()
    }

    /// Sort.
    #[action(effect = "local-state", name = "sort")]
    fn apply_sort(&self) {}
}

fn main() {}
