use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Clear.
    #[action(effect = "remote")]
    fn clear(&self) {}
}

// Using the type as a component still type-checks: only the one error above.
fn contract_of<T: Component>() -> &'static agent_surface::contract::ComponentContract {
    T::contract()
}

fn main() {
    let _ = contract_of::<Table>();
}
