use agent_surface::prelude::*;
use std::collections::HashMap;

#[agent_schema]
pub struct SetLabels {
    /// Labels by device.
    pub labels: HashMap<String, u32>,
}

fn main() {}
