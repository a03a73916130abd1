use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table", parent(type = "Devices", instance = "a b"))]
impl Table {}

fn main() {}
