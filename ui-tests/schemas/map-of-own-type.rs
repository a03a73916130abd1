use std::collections::BTreeMap;

use agent_surface::prelude::*;

/// A folder.
#[agent_schema]
pub struct Folder {
    /// The folders inside, by name.
    #[serde(default)]
    #[schemars(length(max = 4))]
    pub children: BTreeMap<String, Folder>,
}

fn main() {}
