//! A syntax error inside a method body is reported once, by rustc; the
//! attributes are still checked, and the helper attributes and the uses of
//! the type raise nothing more.

use agent_surface::prelude::*;
use std::sync::Arc;

pub struct Counter;

/// A counter.
#[agent_component(type = "demo.counter")]
impl Counter {
    /// The count.
    #[observation]
    fn count(&self) -> u32 {
        let x = ;
        1
    }

    /// Increments.
    #[action(effect = "local-stat")]
    fn increment(&self) {}
}

fn main() {
    let registry = Registry::builder().build();
    let _ = registry.mount(Arc::new(Counter));
}
