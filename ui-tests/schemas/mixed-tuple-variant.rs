use agent_surface::prelude::*;

#[agent_schema]
pub enum Point {
    /// A plain coordinate pair.
    Plain(f64, f64),
    /// A labelled coordinate pair.
    Labelled(String, f64, f64),
}

fn main() {}
