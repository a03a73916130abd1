use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Check.
    #[observation(when = r#check)]
    fn check(&self) -> bool {
        true
    }
}

fn main() {}
