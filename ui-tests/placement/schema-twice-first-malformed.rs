use agent_surface::prelude::*;

/// Twice, the first with a mistake.
#[agent_schema(bogus)]
#[agent_schema]
pub struct Twice {
    /// The count.
    pub n: u32,
}

/// On a function.
#[agent_schema(bogus)]
fn not_a_type() {}

fn main() {
    let _ = Twice { n: 1 };
    not_a_type();
}
