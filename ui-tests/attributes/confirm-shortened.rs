use agent_surface::prelude::*;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Clear everything.
    #[action(effect = "local-state", confirm = "required")]
    fn clear(&self) {}
}

struct Panel;

fn main() {}
