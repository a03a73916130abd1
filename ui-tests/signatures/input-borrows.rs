use agent_surface::prelude::*;
use std::borrow::Cow;

/// A rename that borrows.
#[agent_schema]
pub struct Rename<'a> {
    /// The new name.
    pub name: Cow<'a, str>,
}

pub struct Profile;

/// A profile.
#[agent_component(type = "users.profile")]
impl Profile {
    /// Renames.
    #[action(effect = "local-state")]
    fn rename<'a>(&'a self, input: Rename<'a>) -> u32 {
        input.name.len() as u32
    }
}

fn main() {}
