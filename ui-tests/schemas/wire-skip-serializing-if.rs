use agent_surface::prelude::*;

/// The rows.
#[agent_schema(output)]
pub struct Rows {
    /// The ids.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
}

fn main() {}
