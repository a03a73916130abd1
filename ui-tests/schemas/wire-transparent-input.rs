use agent_surface::prelude::*;

/// A name.
#[agent_schema]
#[serde(transparent)]
pub struct Name {
    /// The text.
    #[agent_schema(unbounded)] pub text: String,
}

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Rename.
    #[action(effect = "local-state")]
    fn rename(&self, name: Name) {
        let _ = name;
    }
}

struct Panel;

fn main() {}
