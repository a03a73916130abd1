use agent_surface::prelude::*;

/// Nothing at all.
#[agent_schema]
pub enum Never {}

fn main() {}
