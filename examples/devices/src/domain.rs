//! The domain plane of the console: the backend's `devices.disable`
//! procedure, and the reference the devices table mounts with.
//!
//! The contract is declared once, on the input type both sides share; the
//! backend exposes it as an MCP tool (see [`crate::server`]) and the console
//! references it with `deviceIds` bound to the table's selection.

use agent_surface::prelude::*;

/// The result of disabling devices.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Disabled {
    /// How many devices changed state.
    pub disabled: u32,
}

/// Disable devices: they stop reporting until an operator re-enables them.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive", output = Disabled)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisableDevices {
    /// The devices to disable.
    #[schemars(length(min = 1, max = 100), inner(length(min = 1, max = 64)))]
    pub device_ids: Vec<String>,
    /// Why they are disabled, for the audit trail.
    #[schemars(length(max = 500))]
    pub reason: Option<String>,
}

/// The permission the backend (and the console, to hide the procedure)
/// requires to disable devices.
pub const DEVICES_WRITE: &str = "devices:write";
