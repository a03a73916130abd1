//! `#[agent_schema]` on types that already derive serde's and schemars'
//! traits (written below the attribute): the existing derives are reused.

use agent_surface::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Derives below the attribute.
#[agent_schema]
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Below {
    /// A name.
    #[agent_schema(unbounded)] pub device_name: String,
}

/// Only some derives, with other attributes between.
#[agent_schema]
#[derive(Debug)]
#[serde(rename_all = "snake_case")]
#[derive(Serialize)]
pub struct Partly {
    /// A name.
    #[agent_schema(unbounded)] pub device_name: String,
}

/// An enum that derives everything itself.
#[agent_schema]
#[derive(Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub enum Mode {
    /// Fast.
    Fast,
    /// Slow.
    Slow,
}

pub struct Devices;

/// Devices.
#[agent_component(type = "devices.derives")]
impl Devices {
    /// Uses every shape.
    #[action(effect = "local-state")]
    fn rename(&self, input: Below) -> Below {
        input
    }

    /// Partly derived.
    #[action(effect = "local-state")]
    fn partly(&self, input: Partly) -> Mode {
        let _ = input;
        Mode::Fast
    }
}

fn main() {
    let contract = Devices::contract().checked().expect("valid contract");
    let input = contract.capability("rename").unwrap().input_schema().unwrap().json();
    assert!(input["properties"].get("deviceName").is_some());
    assert_eq!(input["additionalProperties"], false);
    let value = serde_json::to_value(Partly { device_name: "a".into() }).unwrap();
    assert_eq!(value, serde_json::json!({"device_name": "a"}));
    assert_eq!(serde_json::from_value::<Mode>(serde_json::json!("slow")).unwrap(), Mode::Slow);
}
