use agent_surface::prelude::*;

/// A rename.
#[agent_schema]
pub struct Rename {
    /// The new name.
    pub name: String,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Renames it.
    #[action(effect = "local-state")]
    fn rename(&self, input: Rename) {
        let _ = input;
    }

    /// Renames it again.
    #[action(effect = "local-state")]
    fn rename_again(&self, input: Rename) {
        let _ = input;
    }
}

fn main() {}
