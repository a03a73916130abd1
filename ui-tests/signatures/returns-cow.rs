use agent_surface::prelude::*;
use std::borrow::Cow;

pub struct Profile {
    name: String,
}

/// A profile.
#[agent_component(type = "users.profile")]
impl Profile {
    /// The name, with the lifetime elided.
    #[observation]
    fn name(&self) -> Cow<str> {
        Cow::Borrowed(&self.name)
    }

    /// The names, borrowed from the profile.
    #[observation]
    fn names(&self) -> Result<Vec<Cow<'_, str>>, ActionError> {
        Ok(vec![Cow::Borrowed(&self.name)])
    }

    /// A static name is owned: fine.
    #[observation]
    fn kind(&self) -> Cow<'static, str> {
        Cow::Borrowed("user")
    }
}

fn main() {}
