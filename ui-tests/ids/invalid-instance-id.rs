use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table", instance = "main room")]
impl Table {}

fn main() {}
