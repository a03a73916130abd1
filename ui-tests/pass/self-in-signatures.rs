//! `Self` in a handler signature names the component (also inside the
//! policies of an attribute); `self: &Self` is `&self` written out; lifetime
//! parameters that borrow nothing from the call are fine.

use agent_surface::policy::Policy;
use agent_surface::prelude::*;

/// Settings that are their own schema.
#[agent_schema]
#[derive(Clone)]
pub struct Settings {
    /// The level.
    pub level: u32,
}

struct Allow;

impl Policy for Allow {
    fn name(&self) -> &str {
        "allow"
    }
}

impl Settings {
    fn allow() -> Allow {
        Allow
    }
}

/// Settings as a component.
#[agent_component(type = "settings.panel", policies = [Self::allow()])]
impl Settings {
    /// The settings.
    #[observation]
    fn read(&self) -> Self {
        self.clone()
    }

    /// The settings, if any.
    #[observation]
    fn maybe(self: &Self) -> Option<Self> {
        Some(self.clone())
    }

    /// Replace the settings.
    #[action(effect = "local-state", policies = [Self::allow()])]
    async fn replace(&self, input: Self) -> Result<Self, ActionError> {
        Ok(input)
    }

    /// The level.
    #[observation]
    fn level<'a>(&'a self) -> u32 {
        self.level
    }
}

fn main() {
    let contract = Settings::contract().checked().unwrap();
    assert!(contract.capability("replace").unwrap().input_schema().is_some());
    assert_eq!(contract.capabilities().len(), 4);
}
