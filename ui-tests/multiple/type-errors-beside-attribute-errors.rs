//! An attribute error does not hide the type errors of the other
//! capabilities: all of them come in one build.

use agent_surface::prelude::*;

pub struct Rename {
    pub name: String,
}

pub struct Profile;

/// A profile.
#[agent_component(type = "users.profile")]
impl Profile {
    #[observation]
    fn undocumented(&self) -> u32 {
        1
    }

    /// Renames, with an input that has no schema.
    #[action(effect = "local-state")]
    fn rename(&self, input: Rename) {
        let _ = input.name;
    }

    /// Returns nothing to read.
    #[observation]
    fn touch(&self) -> std::result::Result<(), ActionError> {
        Ok(())
    }
}

fn main() {}
