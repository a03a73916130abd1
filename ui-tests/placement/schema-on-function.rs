use agent_surface::prelude::*;

/// Not a type.
#[agent_schema]
pub fn status() -> bool {
    true
}

fn main() {}
