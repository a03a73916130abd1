use agent_surface::prelude::*;

/// A tagged value.
#[agent_schema]
pub struct Tagged<T>(pub String, pub T);

pub struct Gauges;

/// Gauges.
#[agent_component(type = "devices.gauges")]
impl Gauges {
    /// The current reading.
    #[observation]
    fn reading(&self) -> Tagged<f64> {
        Tagged(String::new(), 0.0)
    }
}

fn main() {}
