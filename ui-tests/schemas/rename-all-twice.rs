use agent_surface::prelude::*;

/// A status.
#[agent_schema]
#[serde(rename_all = "camelCase", rename_all = "snake_case")]
pub struct Status {
    /// Whether it is online.
    pub is_online: bool,
}

fn main() {}
