// serde's derive renames every field and variant for both directions, the
// skipped ones too: a name it would cut inside a character (or past the end
// of `__`) must be given, both ways.
use agent_surface::prelude::*;

/// A skipped field with a non-ASCII name.
#[agent_schema(output)]
pub struct Skipped {
    /// The value.
    pub v: u32,
    /// Hidden.
    #[serde(skip)]
    pub été: u32,
}

/// A skipped field of underscores.
#[agent_schema(output)]
pub struct Underscores {
    /// The value.
    pub v: u32,
    /// Hidden.
    #[serde(skip)]
    pub __: u32,
}

/// A skipped variant with a non-ASCII name.
#[agent_schema]
pub enum Mood {
    /// Calm.
    Calm,
    /// Hidden.
    #[serde(skip)]
    Ärger,
}

/// Renamed one way only.
#[agent_schema(input)]
pub struct OneWay {
    /// The value.
    #[serde(rename(deserialize = "ete"))]
    pub été: u32,
}

/// Renamed both ways: fine.
#[agent_schema(output)]
pub struct Renamed {
    /// The value.
    pub v: u32,
    /// Hidden.
    #[serde(skip, rename = "ete")]
    pub été: u32,
}

fn main() {}
