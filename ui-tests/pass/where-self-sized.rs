//! A handler with `where Self: Sized` and no generic parameters is an
//! ordinary handler.

use agent_surface::prelude::*;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Clear.
    #[action(effect = "local-state")]
    fn clear(&self)
    where
        Self: Sized,
    {
    }
}

struct Panel;

fn main() {
    let contract = Panel::contract().checked().expect("valid contract");
    assert!(contract.capability("clear").is_some());
}
