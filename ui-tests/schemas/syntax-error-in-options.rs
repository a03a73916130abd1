use agent_surface::prelude::*;

#[agent_schema(output input)]
pub struct Status {
    /// Whether the device is online.
    pub online: bool,
}

fn main() {
    let _ = serde_json::to_value(Status { online: true });
}
