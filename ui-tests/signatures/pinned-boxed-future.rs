use std::future::Future;
use std::pin::Pin;

use agent_surface::prelude::*;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Turn it on.
    #[action(effect = "local-state")]
    fn on(&self) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        Box::pin(async { true })
    }
}

fn main() {}
