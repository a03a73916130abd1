use agent_surface::prelude::*;

/// A change to a label; omitted fields stay as they are.
#[agent_schema]
pub struct Patch {
    /// The label; null clears it.
    #[serde(default)]
    #[schemars(length(max = 32))]
    pub label: Option<Option<String>>,
}

fn main() {}
