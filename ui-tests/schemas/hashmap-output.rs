use agent_surface::prelude::*;
use std::collections::BTreeMap;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Counts by status.
    #[observation]
    fn counts(&self) -> BTreeMap<String, u32> {
        BTreeMap::new()
    }
}

fn main() {}
