use agent_surface::prelude::*;

#[agent_schema]
pub struct Point {
    /// A labelled coordinate.
    pub labelled: (String, f64),
}

fn main() {}
