use agent_surface::prelude::*;

struct Table<T>(T);

/// A table.
#[agent_component(type = "devices.table")]
impl<T: Send + Sync + 'static> Table<T> {}

fn main() {}
