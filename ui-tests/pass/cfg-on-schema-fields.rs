//! `#[cfg]` on a schema field, a variant or a procedure field: compiled out,
//! its type is not checked (it may not even exist in this build).

use agent_surface::prelude::*;
use agent_surface::procedure::Procedure;

/// A filter.
#[agent_schema]
pub struct Filter {
    /// The city.
    pub city: String,
    /// Only in test builds.
    #[cfg(test)]
    pub region: only_in_tests::Region,
}

/// A mode.
#[agent_schema]
pub enum Mode {
    /// Fast.
    Fast,
    /// Only in test builds.
    #[cfg(test)]
    Exact(only_in_tests::Precision, u128),
}

/// Archive devices.
#[agent_procedure(id = "domain:devices.archive", effect = "server-mutation")]
pub struct Archive {
    /// The devices.
    #[agent_schema(unbounded)] pub device_ids: Vec<String>,
    /// Only in test builds.
    #[cfg(test)]
    pub region: only_in_tests::Region,
}

fn main() {
    assert_eq!(Archive::fields().device_ids.name(), "deviceIds");
    let _ = (Filter { city: String::new() }, Mode::Fast);
}
