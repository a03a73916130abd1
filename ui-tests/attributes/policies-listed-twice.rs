use agent_surface::prelude::*;

/// A door.
pub struct Door;

/// A door.
#[agent_component(type = "ui.door", policies = [authenticated(), authenticated()])]
impl Door {
    /// Opens it.
    #[action(effect = "local-state", policies = [authenticated(), rate_limit(3, std::time::Duration::from_secs(60)), rate_limit(3, std::time::Duration::from_secs(60))])]
    fn open(&self) {}
}

fn main() {}
