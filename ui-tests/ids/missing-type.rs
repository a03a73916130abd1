use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(description = "A table.")]
impl Table {}

fn main() {}
