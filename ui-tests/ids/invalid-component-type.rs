use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "Devices.Table")]
impl Table {}

fn main() {}
