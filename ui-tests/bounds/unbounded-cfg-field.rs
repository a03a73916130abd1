use agent_surface::prelude::*;

/// A rename.
#[agent_schema]
pub struct Rename {
    /// The new name, on every platform.
    #[cfg(all())]
    pub name: String,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Does it.
    #[action(effect = "local-state")]
    fn act(&self, input: Rename) {
        let _ = input;
    }
}

fn main() {}
