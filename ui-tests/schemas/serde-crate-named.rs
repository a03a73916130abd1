use agent_surface::prelude::*;

/// Names serde's crate.
#[agent_schema]
#[serde(crate = "serde")]
pub struct Named {
    /// The count.
    pub n: u32,
}

fn main() {}
