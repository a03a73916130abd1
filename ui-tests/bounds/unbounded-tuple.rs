use agent_surface::prelude::*;

/// Names.
#[agent_schema]
pub struct Names {
    /// Two names.
    pub names: (String, String),
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Does it.
    #[action(effect = "local-state")]
    fn act(&self, input: Names) {
        let _ = input;
    }
}

fn main() {}
