// A handler borrows its component and its context for the call only.
use agent_surface::prelude::*;

/// A dial.
pub struct Dial;

/// A dial.
#[agent_component(type = "ui.dial")]
impl Dial {
    /// Its value.
    #[observation]
    fn value(&'static self) -> u32 {
        1
    }

    /// Turns it.
    #[action(effect = "local-state")]
    fn turn(&self, ctx: &'static ActionContext) {
        let _ = ctx;
    }
}

fn main() {}
