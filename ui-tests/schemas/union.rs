use agent_surface::prelude::*;

#[agent_schema]
pub union Bits {
    a: u32,
    b: f32,
}

fn main() {}
