use agent_surface::prelude::*;

/// What the table reports.
#[agent_schema(output)]
pub struct Report {
    /// The count.
    #[schemars(rename = "count")]
    pub n: u32,
}

/// What the table takes.
#[agent_schema]
pub struct Take {
    /// The count.
    pub n: u32,
    /// Hidden from the schema only.
    #[schemars(skip)]
    pub other: u32,
}

/// A choice.
#[agent_schema]
pub enum Choice {
    /// One.
    #[schemars(rename = "uno")]
    One,
}

fn main() {}
