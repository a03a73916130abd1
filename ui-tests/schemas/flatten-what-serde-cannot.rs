// serde flattens structs with named fields, maps and enums with data; a
// flattened number, string or enum of unit variants fails every value at
// run time, so it fails the build instead, at the field's type.
use agent_surface::prelude::*;

/// A speed.
#[agent_schema]
pub enum Speed {
    /// Fast.
    Fast,
    /// Slow.
    Slow,
}

/// A count.
type Count = u32;

/// Paging.
#[agent_schema]
pub struct Paging {
    /// The page.
    #[schemars(range(max = 99))]
    pub page: u32,
}

/// A window.
#[agent_schema]
pub struct Window {
    /// Its size.
    #[schemars(range(max = 99))]
    pub size: u32,
}

/// An input.
#[agent_schema]
pub struct Run {
    /// The speed.
    #[serde(flatten)]
    pub speed: Speed,
    /// A count.
    #[serde(flatten)]
    pub count: Count,
    /// Paging: fine.
    #[serde(flatten)]
    pub paging: Paging,
    /// An optional window: fine.
    #[serde(flatten)]
    pub more: Option<Box<Window>>,
}

fn main() {}
