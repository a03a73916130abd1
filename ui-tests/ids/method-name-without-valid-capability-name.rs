use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Two-factor state.
    #[observation]
    fn _2fa(&self) -> bool {
        true
    }
}

fn main() {}
