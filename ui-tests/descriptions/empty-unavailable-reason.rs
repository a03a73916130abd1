use agent_surface::prelude::*;

struct Drawer;

/// A drawer.
#[agent_component(type = "devices.drawer")]
impl Drawer {
    /// Close it.
    #[action(effect = "local-state", when = is_open, unavailable_reason = "")]
    fn close(&self) {}

    fn is_open(&self) -> bool {
        true
    }
}

fn main() {}
