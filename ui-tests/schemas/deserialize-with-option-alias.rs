use agent_surface::prelude::*;
use serde::{Deserialize, Deserializer};

type MaybeText = Option<String>;

fn trimmed<'de, D: Deserializer<'de>>(deserializer: D) -> Result<MaybeText, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.map(|s| s.trim().to_owned()))
}

/// A note.
#[agent_schema]
pub struct Note {
    /// The text.
    #[serde(deserialize_with = "trimmed")]
    #[schemars(length(max = 64))]
    pub text: MaybeText,
}

fn main() {}
