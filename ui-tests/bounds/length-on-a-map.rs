use agent_surface::prelude::*;

/// Settings.
#[agent_schema]
pub struct Store {
    /// Settings: a length does not bound free-form JSON.
    #[schemars(length(max = 5))]
    pub settings: serde_json::Map<String, serde_json::Value>,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Stores.
    #[action(effect = "local-state")]
    fn store(&self, input: Store) {
        let _ = input;
    }
}

fn main() {}
