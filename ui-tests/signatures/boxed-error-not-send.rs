use agent_surface::prelude::*;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Clear.
    #[action(effect = "local-state")]
    fn clear(&self) -> Result<(), Box<dyn std::error::Error>> {
        Ok(())
    }
}

struct Panel;

fn main() {}
