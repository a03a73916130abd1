use agent_surface::prelude::*;

struct Table;

#[agent_component(type = "devices.table")]
impl Table {}

fn main() {}
