use agent_surface::prelude::*;

/// Schema-only serde mirrors.
#[agent_schema]
#[schemars(deny_unknown_fields)]
pub struct Mirrors {
    /// A default the schema alone knows.
    #[schemars(default)]
    pub n: u32,
}

/// A variant skipped in the schema alone.
#[agent_schema]
pub enum Pick {
    /// A.
    A,
    /// B.
    #[schemars(skip)]
    B,
}

fn main() {}
