use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Rows.
    #[observation(when = ready)]
    fn rows(&self) -> u32 {
        1
    }

    /// Clear.
    #[action(effect = "local-state", when = open)]
    fn clear(&self) {}

    fn ready<T: Default>(&self) -> bool {
        true
    }

    unsafe fn open(&self) -> bool {
        true
    }
}

fn main() {}
