use agent_surface::prelude::*;

/// A table.
#[agent_component(type = "devices.table")]
struct Table;

fn main() {}
