use agent_surface::prelude::*;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Clear.
    #[action(effect = "local-state", when = is_open())]
    fn clear(&self) {}

    fn is_open(&self) -> bool {
        true
    }
}

struct Panel;

fn main() {}
