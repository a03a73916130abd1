//! The domain plane of the console: the backend's `devices.disable`
//! procedure, and the reference the devices table mounts with.
//!
//! The contract is declared once, on the input type both sides share; the
//! backend exposes it as an MCP tool (see [`crate::server`]) and the console
//! references it with `deviceIds` bound to the table's selection.

use std::sync::Arc;

use agent_surface::prelude::*;

use crate::components::Console;

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

/// The console's reference to `domain:devices.disable`: `deviceIds` is the
/// table's live selection, locked against the agent; available while
/// something is selected; visible only to signed-in users who may write
/// (the policies the table's `#[reference]` declares, installed on it).
pub fn disable_reference(console: &Arc<Console>) -> ProcedureRef<DisableDevices> {
    let selection = Arc::clone(console);
    let when = Arc::clone(console);
    let note = Arc::clone(console);
    ProcedureRef::<DisableDevices>::new()
        .bind(DisableDevices::fields().device_ids, move || {
            selection.selected()
        })
        .when(move || !when.selected().is_empty())
        .unavailable_reason("Select at least one device first")
        .describe(move || {
            let selected = note.selected();
            match selected.len() {
                0 => "Nothing is selected".to_owned(),
                n => format!("Disables the {n} selected devices: {}", selected.join(", ")),
            }
        })
}
