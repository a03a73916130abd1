use std::future::Future;
use std::pin::Pin;

use agent_surface::prelude::*;

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub struct Lamp;

/// A lamp.
#[agent_component(type = "home.lamp")]
impl Lamp {
    /// Turn it on.
    #[action(effect = "local-state")]
    fn on(&self) -> BoxFut<'static, bool> {
        Box::pin(async { true })
    }
}

fn main() {}
