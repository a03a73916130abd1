//! serde attributes the pre-checks accept: aliases given more than once, a
//! rename given once per direction, `transparent` with one field beside a
//! skipped one, an adjacently tagged enum whose field shares the tag's name,
//! a field read with `deserialize_with` whose type (an alias) is no
//! `Option`, and an `Option<Option<T>>` read with `deserialize_with` and
//! `default`.

use std::marker::PhantomData;

use agent_surface::prelude::*;
use serde::{Deserialize, Deserializer};

type Text = String;

fn trimmed<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
    Ok(String::deserialize(deserializer)?.trim().to_owned())
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<u32>>, D::Error> {
    Option::<u32>::deserialize(deserializer).map(Some)
}

/// A note.
#[agent_schema]
pub struct Note {
    /// The text.
    #[serde(alias = "body", alias = "content")]
    #[serde(rename(serialize = "text"))]
    #[serde(rename(deserialize = "text"))]
    #[serde(deserialize_with = "trimmed")]
    #[schemars(length(max = 64))]
    pub text: Text,
    /// The level; null clears it.
    #[serde(default, deserialize_with = "present")]
    pub level: Option<Option<u32>>,
}

/// A name.
#[agent_schema(output)]
#[serde(transparent)]
pub struct Name {
    /// The text.
    #[schemars(length(max = 64))]
    pub text: String,
    /// Not on the wire.
    #[serde(skip)]
    pub marker: PhantomData<u8>,
}

/// An operation.
#[agent_schema]
#[serde(tag = "kind", content = "data")]
pub enum Op {
    /// Move.
    Move {
        /// How far.
        kind: u32,
    },
}

fn main() {}
