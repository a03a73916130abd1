use agent_surface::prelude::*;

struct Table;

impl Table {
    /// The row count.
    #[observation]
    fn count(&self) -> u32 {
        0
    }
}

fn main() {}
