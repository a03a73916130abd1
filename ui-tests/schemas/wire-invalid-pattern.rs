use agent_surface::prelude::*;

/// A rename.
#[agent_schema]
pub struct Rename {
    /// The new name.
    #[schemars(regex(pattern = r"^(?=[a-z])\w+$"))]
    pub name: String,
    /// The code.
    #[schemars(pattern(r"[unclosed"))]
    pub code: String,
}

fn main() {}
