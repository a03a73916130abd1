//! A capability method named `component` beside component-level policies,
//! helpers named by keywords, and a procedure field that allows its own
//! lint, under `deny(warnings)`.
#![deny(warnings)]

use agent_surface::policy::authenticated;
use agent_surface::prelude::*;

pub struct Clash;

/// Names the generated code also uses.
#[agent_component(type = "names.clash", policies = [authenticated()])]
impl Clash {
    /// The component.
    #[observation(when = "type", unavailable_reason = match)]
    fn component(&self) -> u32 {
        1
    }

    fn r#type(&self) -> bool {
        true
    }

    fn r#match(&self) -> String {
        String::from("never")
    }
}

/// Disable a device.
#[agent_procedure(id = "domain:devices.disable", effect = "server-mutation")]
#[allow(non_snake_case)]
pub struct Disable {
    /// The device.
    #[schemars(length(max = 64))]
    pub ID: String,
    /// Why.
    #[cfg_attr(all(), serde(rename = "why"))]
    #[schemars(length(max = 64))]
    pub reason_code: String,
}

fn main() {
    // The handles name the fields as serde reads them.
    let fields = Disable::fields();
    assert_eq!(fields.ID.name(), "iD");
    assert_eq!(fields.reason_code.name(), "why");
}
