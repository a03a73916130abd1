use agent_surface::prelude::*;

pub struct Table<'a> {
    rows: &'a [String],
}

/// A table.
#[agent_component(type = "devices.table")]
impl<'a> Table<'a> {
    /// The row count.
    #[observation]
    fn count(&self) -> usize {
        self.rows.len()
    }
}

fn main() {}
