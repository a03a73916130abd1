use agent_surface::prelude::*;

#[agent_schema]
pub enum Reading {
    /// A value with its unit, bounds and precision.
    Measured(f64, String, f64, u8),
}

fn main() {}
