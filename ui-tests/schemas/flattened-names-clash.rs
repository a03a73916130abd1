use agent_surface::prelude::*;
/// Inner.
#[agent_schema]
pub struct Inner {
    /// Kind.
    #[schemars(length(max = 9))]
    pub kind: String,
}
/// Tagged.
#[agent_schema]
#[serde(tag = "kind")]
pub enum Op {
    /// Wrap.
    Wrap(Inner),
}
/// Deep.
#[agent_schema]
pub struct Deep {
    /// Level.
    #[schemars(range(max = 9))]
    pub level: u32,
}
/// Mid flattens Deep.
#[agent_schema]
pub struct Mid {
    /// Other.
    #[schemars(range(max = 9))]
    pub other: u32,
    /// Deep.
    #[serde(flatten)]
    pub deep: Deep,
}
/// Top flattens Mid, and has its own `level`.
#[agent_schema]
pub struct Top {
    /// Level.
    #[schemars(range(max = 9))]
    pub level: u32,
    /// Mid.
    #[serde(flatten)]
    pub mid: Mid,
}
/// Two flattened that clash with each other.
#[agent_schema]
pub struct Two {
    /// A.
    #[serde(flatten)]
    pub a: Deep,
    /// B.
    #[serde(flatten)]
    pub b: Mid,
}
/// Alias clash with a flattened field.
#[agent_schema]
pub struct Aliased {
    /// Stage.
    #[serde(alias = "other")]
    #[schemars(range(max = 9))]
    pub stage: u32,
    /// Mid.
    #[serde(flatten)]
    pub mid: Mid,
}
/// Fine: no clash, through an `Option<Box<…>>`.
#[agent_schema]
pub struct Fine {
    /// Else.
    #[schemars(range(max = 9))]
    pub stage: u32,
    /// Mid.
    #[serde(flatten)]
    pub mid: Option<Box<Mid>>,
}

fn main() {}
