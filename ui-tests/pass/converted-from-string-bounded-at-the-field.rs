//! A type read `try_from` another is that type on the wire: read from a
//! bounded `#[agent_schema]` type, it is bounded wherever it is a field.

use agent_surface::prelude::*;

/// A device id as sent: a bounded string.
#[agent_schema]
pub struct RawId(#[schemars(length(max = 16))] pub String);

/// A device id, read from its raw form.
#[agent_schema]
#[serde(try_from = "RawId")]
pub struct DeviceId {
    /// The id.
    #[schemars(length(max = 16))]
    pub id: String,
}

impl TryFrom<RawId> for DeviceId {
    type Error = String;
    fn try_from(raw: RawId) -> Result<Self, String> {
        Ok(DeviceId { id: raw.0 })
    }
}

/// What to disable.
#[agent_schema]
pub struct Disable {
    /// The device.
    pub device: DeviceId,
}

pub struct Fleet;

/// The fleet.
#[agent_component(type = "home.fleet")]
impl Fleet {
    /// Disable a device.
    #[action(effect = "local-state")]
    fn disable(&self, input: Disable) {
        let _ = input;
    }
}

fn main() {
    let contract = Fleet::contract().checked().expect("valid contract");
    let schema = contract.capability("disable").unwrap().input_schema().unwrap().json().to_string();
    assert!(schema.contains("\"maxLength\":16"), "{schema}");
    assert!(!schema.contains("\"id\""), "the wire form is the raw id: {schema}");
}
