use agent_surface::prelude::*;

/// Both ways.
#[agent_schema]
pub struct Both {
    /// The count.
    pub n: u32,
    /// Written never.
    #[serde(skip_serializing)]
    pub secret: u32,
    /// Read never.
    #[serde(skip_deserializing)]
    pub computed: u32,
}

fn main() {}
