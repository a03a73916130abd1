use agent_surface::prelude::*;

/// Settings to store.
#[agent_schema]
pub struct Store {
    /// Any JSON.
    pub settings: serde_json::Value,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Stores settings.
    #[action(effect = "local-state")]
    fn store(&self, input: Store) {
        let _ = input;
    }
}

fn main() {}
