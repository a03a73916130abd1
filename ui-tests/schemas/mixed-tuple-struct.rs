use agent_surface::prelude::*;

/// A label and its value.
#[agent_schema]
pub struct Reading(pub String, pub f64);

fn main() {}
