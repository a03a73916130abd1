use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table.with.a.very.long.type.name.that.goes.on.and.on.and.on.and.on.and.on.and.on.and.on.and.on")]
impl Table {
    /// Select every visible row of the table.
    #[action(effect = "local-state")]
    fn select_every_visible_row_of_the_table(&self) {}
}

fn main() {}
