use agent_surface::prelude::*;

/// A status.
#[agent_schema]
#[serde(rename_all = "camel")]
pub struct Status {
    /// Whether the device is online.
    pub is_online: bool,
}

fn main() {}
