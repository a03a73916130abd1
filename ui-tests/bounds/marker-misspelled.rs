use agent_surface::prelude::*;

/// A note.
#[agent_schema]
pub struct Note {
    /// The text.
    #[agent_schema(unbound)]
    pub text: String,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Does it.
    #[action(effect = "local-state")]
    fn act(&self, input: Note) {
        let _ = input;
    }
}

fn main() {}
