use agent_surface::prelude::*;

#[agent_schema]
pub struct Big {
    /// An id.
    pub id: u128,
}

fn main() {}
