use agent_surface::prelude::*;

/// Odd names.
#[agent_schema]
pub struct Odd {
    /// Empty.
    #[serde(rename = "")]
    pub a: u32,
    /// Spaces and slashes.
    #[serde(rename = "a b/$ref")]
    pub b: u32,
    /// Not ASCII.
    pub größe: u32,
}

fn main() {}
