use agent_surface::prelude::*;

/// A door.
pub struct Door;

/// A door.
#[agent_component(type = "ui.door")]
impl Door {
    /// Opens it.
    #[action(effect = "local-state", when = self)]
    fn open(&self) {}

    /// Closes it.
    #[action(effect = "local-state", when = Self)]
    fn close(&self) {}
}

fn main() {}
