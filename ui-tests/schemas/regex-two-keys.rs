use agent_surface::prelude::*;

/// A device.
#[agent_schema]
pub struct Device {
    /// Its id.
    #[schemars(length(max = 16), regex(pattern = r"^[a-z]+$", path = "x"))]
    pub id: String,
}

fn main() {}
