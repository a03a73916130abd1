use agent_surface::prelude::*;
use serde::{Deserialize, Deserializer};

fn trimmed<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.map(|s| s.trim().to_owned()))
}

/// A note.
#[agent_schema]
pub struct Note {
    /// The text.
    #[cfg_attr(all(), serde(deserialize_with = "trimmed"))]
    #[schemars(length(max = 64))]
    pub text: Option<String>,
}

fn main() {}
