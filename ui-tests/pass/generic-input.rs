//! A generic `#[agent_schema]` struct is an action input once its type
//! arguments are schema types.

use agent_surface::prelude::*;

#[agent_schema]
pub struct DeviceRef {
    /// The device id.
    pub id: String,
}

#[agent_schema]
pub struct Batch<T> {
    /// The items, in order.
    #[agent_schema(unbounded)] pub items: Vec<T>,
    /// Whether to stop at the first failure.
    pub stop_on_error: bool,
}

pub struct Devices;

/// Devices.
#[agent_component(type = "devices.batch")]
impl Devices {
    /// Disables a batch of devices.
    #[action(effect = "local-state")]
    fn disable(&self, input: Batch<DeviceRef>) -> Batch<String> {
        Batch {
            items: input.items.into_iter().map(|item| item.id).collect(),
            stop_on_error: input.stop_on_error,
        }
    }
}

fn main() {
    let contract = Devices::contract().checked().expect("valid contract");
    let input = contract.capability("disable").unwrap().input_schema().unwrap().json();
    assert_eq!(input["additionalProperties"], false);
    assert!(input["properties"].get("stopOnError").is_some());
}
