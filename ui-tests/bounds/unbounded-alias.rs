use agent_surface::prelude::*;

/// A city name.
pub type City = String;

/// A move.
#[agent_schema]
pub struct Move {
    /// Where to.
    pub city: City,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Does it.
    #[action(effect = "local-state")]
    fn act(&self, input: Move) {
        let _ = input;
    }
}

fn main() {}
