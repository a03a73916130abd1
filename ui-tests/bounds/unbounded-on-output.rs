use agent_surface::prelude::*;

/// A status.
#[agent_schema(output)]
pub struct Status {
    /// The text: agents never send it.
    #[agent_schema(unbounded)]
    pub text: String,
}

fn main() {}
