use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = devices, priority = "high", enabled = 1)]
impl Table {}

fn main() {}
