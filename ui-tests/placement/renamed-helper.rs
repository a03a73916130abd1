use agent_surface::action as act;
use agent_surface::prelude::*;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Shown.
    #[observation]
    fn shown(&self) -> bool {
        true
    }

    /// Clear.
    #[act(effect = "local-state")]
    fn clear(&self) {}
}

struct Panel;

fn main() {}
