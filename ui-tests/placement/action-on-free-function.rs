use agent_surface::prelude::*;

/// Clear.
#[action(effect = "local-state")]
fn clear() {}

fn main() {}
