//! A type read `try_from` a `String` is a string on the wire, described
//! by a reference to its own schema: a length on the field holding it does
//! not bound it.

use agent_surface::prelude::*;

/// A device id, read from a string.
#[agent_schema]
#[serde(try_from = "String")]
pub struct DeviceId {
    /// The id.
    #[schemars(length(max = 16))]
    pub id: String,
}

impl TryFrom<String> for DeviceId {
    type Error = String;
    fn try_from(id: String) -> Result<Self, String> {
        Ok(DeviceId { id })
    }
}

/// What to disable.
#[agent_schema]
pub struct Disable {
    /// The device (a length here does not reach the string: the schema
    /// refers to `DeviceId`'s).
    #[schemars(length(max = 16))]
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

fn main() {}
