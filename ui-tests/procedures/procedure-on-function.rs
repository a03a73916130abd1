use agent_surface::prelude::*;

/// Not a struct.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive")]
pub fn disable() {}

fn main() {}
