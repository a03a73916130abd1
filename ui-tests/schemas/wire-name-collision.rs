use agent_surface::prelude::*;

/// A user.
#[agent_schema]
pub struct User {
    /// The id.
    pub user_id: String,
    /// The id again.
    #[serde(rename = "userId")]
    pub legacy_id: String,
    /// The name.
    #[serde(rename = "name")]
    pub display_name: String,
    /// The name again.
    pub name: String,
}

/// A mode.
#[agent_schema]
pub enum Mode {
    /// Read.
    ReadOnly,
    /// Also read.
    #[serde(rename = "readOnly")]
    Viewer,
}

fn main() {}
