use agent_surface::prelude::*;

struct Table;

#[agent_component(type = "Devices", instance = "a b")]
impl Table {
    /// Clear.
    #[action(effect = "destructive")]
    fn clear(&mut self) {}

    #[observation]
    fn read(&self) -> u32 {
        0
    }
}

fn main() {}
