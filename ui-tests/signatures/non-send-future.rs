use agent_surface::prelude::*;
use std::rc::Rc;

struct Table;

async fn refresh() {}

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Refresh.
    #[action(effect = "local-state")]
    async fn refresh(&self) {
        let local = Rc::new(1);
        refresh().await;
        drop(local);
    }
}

fn main() {}
