use agent_surface::prelude::*;

/// A door.
pub struct Door;

/// A door.
#[agent_component(type = "ui.door")]
impl Door {
    /// Opens it.
    #[action(effect = "local-state", policies = authenticated())]
    fn open(&self) {}
}

fn main() {}
