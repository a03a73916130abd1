//! Doc comments a method gets through `#[cfg_attr(pred, doc = …)]` are its
//! description when the predicate holds, joined with its `///` lines in
//! order; under a predicate that does not hold they are not.

use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Turn it on.
    #[cfg_attr(all(), doc = "It stays on until turned off.")]
    #[cfg_attr(any(), doc = "Never part of the description.")]
    #[action(effect = "local-state")]
    fn on(&self) {}

    #[cfg_attr(all(), doc = "Turn it off.")]
    #[action(effect = "local-state")]
    fn off(&self) {}
}

fn main() {
    let contract = Lamp::contract().checked().unwrap();
    let descriptions: Vec<String> = contract
        .capabilities()
        .iter()
        .map(|capability| capability.description().to_string())
        .collect();
    assert_eq!(
        descriptions,
        ["Turn it on. It stays on until turned off.", "Turn it off."]
    );
}
