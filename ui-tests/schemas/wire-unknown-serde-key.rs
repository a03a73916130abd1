use agent_surface::prelude::*;

/// A rename.
#[agent_schema]
pub struct Rename {
    /// The new name.
    #[serde(renam = "title")]
    #[schemars(length(mx = 10))]
    pub name: String,
}

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Rename.
    #[action(effect = "local-state")]
    fn rename(&self, input: Rename) {
        let _ = input;
    }
}

struct Panel;

fn main() {}
