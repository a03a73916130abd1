// A bound written only under `cfg_attr` bounds the field only where its
// predicate holds: where none does, the field is unbounded and named.
use agent_surface::prelude::*;

/// A rename.
#[agent_schema]
pub struct Rename {
    /// The new name (bounded in no build: `any()` never holds).
    #[cfg_attr(any(), schemars(length(max = 8)))]
    pub name: String,
    /// A note (bounded in every build: `all()` always holds).
    #[cfg_attr(all(), schemars(length(max = 80)))]
    pub note: String,
}

/// A file.
pub struct File;

/// A file.
#[agent_component(type = "ui.file")]
impl File {
    /// Renames it.
    #[action(effect = "local-state")]
    fn rename(&self, input: Rename) {
        let _ = input;
    }
}

fn main() {}
