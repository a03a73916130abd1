use agent_surface::prelude::*;

/// A device id, read from a string and checked.
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

pub struct Fleet;

/// The fleet.
#[agent_component(type = "home.fleet")]
impl Fleet {
    /// Disable one device.
    #[action(effect = "local-state")]
    fn disable(&self, input: DeviceId) {
        let _ = input;
    }
}

fn main() {}
