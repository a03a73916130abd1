//! One capability name declared twice under conditions that exclude each
//! other (`unix`, `not(unix)`): whatever the build, one of them is compiled
//! in, and the contract has one capability of that name.

use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Turn it on, on Unix.
    #[cfg(unix)]
    #[action(effect = "local-state")]
    fn on(&self) {}

    /// Turn it on, elsewhere.
    #[cfg(not(unix))]
    #[action(effect = "local-state", name = "on")]
    fn on_elsewhere(&self) {}

    /// Turn it off, in debug builds.
    #[cfg(all(unix, debug_assertions))]
    #[action(effect = "local-state")]
    fn off(&self) {}

    /// Turn it off, otherwise.
    #[cfg(not(all(debug_assertions, unix)))]
    #[action(effect = "local-state", name = "off")]
    fn off_otherwise(&self) {}
}

fn main() {
    let contract = Lamp::contract().checked().unwrap();
    let names: Vec<String> = contract
        .capabilities()
        .iter()
        .map(|capability| capability.name().to_string())
        .collect();
    assert_eq!(names, ["on", "off"]);
}
