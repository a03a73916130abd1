//! A type read `try_from` a `String` is a string on the wire: held by a
//! field of an input, that field is an unbounded string unless it says so.

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

fn main() {}
