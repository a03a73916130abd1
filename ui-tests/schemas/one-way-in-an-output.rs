use agent_surface::prelude::*;

/// Written, never read: an output.
#[agent_schema(output)]
pub struct Report {
    /// Never written.
    #[serde(skip_serializing)]
    pub a: u32,
    /// Never read, but written.
    #[serde(skip_deserializing)]
    pub b: u32,
    /// Renamed per direction.
    #[serde(rename(serialize = "out", deserialize = "in"))]
    pub c: u32,
}

/// A variant read never.
#[agent_schema(output)]
pub enum Status {
    /// Up.
    Up,
    /// Down.
    #[serde(skip_deserializing)]
    Down,
}

fn main() {}
