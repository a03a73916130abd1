use agent_surface::prelude::*;

#[agent_schema]
pub struct Rename {
    /// The new name.
    #[agent_schema(unbounded)] pub name: String,
}

#[agent_schema]
pub struct Other {
    /// Something else.
    pub other: u32,
}

pub struct Profile;

/// A profile.
#[agent_component(type = "users.profile")]
impl Profile {
    /// Renames, checked by a bool.
    #[action(effect = "local-state", precondition = short)]
    fn rename(&self, input: Rename) {
        let _ = input.name;
    }

    /// Renames, checked with a String error.
    #[action(effect = "local-state", precondition = not_empty)]
    fn rename_again(&self, input: Rename) {
        let _ = input.name;
    }

    /// Renames, checked over another input.
    #[action(effect = "local-state", precondition = other)]
    fn rename_once_more(&self, input: Rename) {
        let _ = input.name;
    }

    fn short(&self, input: &Rename) -> bool {
        input.name.len() < 10
    }

    fn not_empty(&self, input: &Rename) -> Result<(), String> {
        if input.name.is_empty() { Err("empty".into()) } else { Ok(()) }
    }

    fn other(&self, _input: &Other) -> Result<(), PreconditionFailure> {
        Ok(())
    }
}

fn main() {}
