//! The domain plane, in the page: the backend operation `domain:devices.disable`
//! (declared once, on its input type) and the in-memory backend that runs
//! it ([`PageBackend`]), installed as the registry's procedure executor.
//! The device table references it with `deviceIds` bound to the person's
//! ticks; a destructive operation, it runs only after the person approves.
//! A backend over `fetch` would implement the same executor with a request.

use std::sync::Arc;

use agent_surface::confirmation::{Presentation, PresentationRequest};
use agent_surface::prelude::*;
use agent_surface::procedure::{
    ExecuteFuture, ManifestEntry, ProcedureCall, ProcedureError, ProcedureExecutor,
    ProcedureManifest,
};

use crate::fleet::Fleet;

/// The result of disabling devices.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Disabled {
    /// How many devices changed state.
    pub disabled: usize,
}

/// Disable devices: they stop reporting until an operator re-enables them.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive", output = Disabled)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisableDevices {
    /// The devices to disable.
    #[schemars(length(min = 1, max = 100), inner(length(min = 1, max = 64)))]
    pub device_ids: Vec<String>,
    /// Why they are disabled, shown to the person who approves.
    #[schemars(length(max = 200))]
    pub reason: Option<String>,
}

/// The table's reference to `domain:devices.disable`: `deviceIds` is the
/// person's live selection, locked against the agent; available while
/// something is ticked.
pub fn disable_reference(fleet: &Arc<Fleet>) -> ProcedureRef<DisableDevices> {
    let selection = Arc::clone(fleet);
    let when = Arc::clone(fleet);
    ProcedureRef::<DisableDevices>::new()
        .bind(DisableDevices::fields().device_ids, move || {
            selection.selected()
        })
        .when(move || !when.selected().is_empty())
        .unavailable_reason("Tick at least one device first")
}

/// The person's view of a request to disable: the devices by name, status
/// and city (and whether the agent chose them rather than the person), the
/// button saying what it does, and the agent's reason shown as the agent's
/// words. `None` (the registry's default wording) for any
/// other request.
pub fn present(request: &PresentationRequest<'_>, fleet: &Fleet) -> Option<Presentation> {
    if request.capability_id != "domain:devices.disable" {
        return None;
    }
    let ids = request.input.get("deviceIds")?.as_array()?;
    let items: Vec<String> = ids
        .iter()
        .filter_map(serde_json::Value::as_str)
        .map(|id| match fleet.device(id) {
            Some(device) => format!(
                "{} ({id}) — {}, {}{}",
                device.name,
                device.status.name(),
                device.city.name(),
                if fleet.picked_by_agent(id) {
                    " — chosen by the agent"
                } else {
                    ""
                }
            ),
            None => format!("unknown device {id}"),
        })
        .collect();
    let picked = ids
        .iter()
        .filter_map(serde_json::Value::as_str)
        .filter(|id| fleet.picked_by_agent(id))
        .count();
    let count = match items.len() {
        1 => "1 device".to_owned(),
        n => format!("{n} devices"),
    };
    let effect = "Disabled devices stop reporting until someone enables them again.";
    let effect = match picked {
        0 => effect.to_owned(),
        n if n == items.len() => {
            format!("The agent chose these devices: you did not tick them. {effect}")
        }
        n => format!("The agent chose {n} of these devices: you did not tick them. {effect}"),
    };
    let presentation = Presentation::new(
        format!("Disable {count}?"),
        format!("Disable {count}"),
        effect,
    )
    .items(items);
    Some(
        match request
            .input
            .get("reason")
            .and_then(serde_json::Value::as_str)
        {
            Some(reason) => presentation.agent_note(reason),
            None => presentation,
        },
    )
}

/// The page's backend: disables devices of the in-memory fleet.
#[derive(Debug)]
pub struct PageBackend {
    fleet: Arc<Fleet>,
    manifest: ProcedureManifest,
}

impl PageBackend {
    /// The backend of `fleet`, exposing `domain:devices.disable` as declared.
    pub fn new(fleet: Arc<Fleet>) -> PageBackend {
        let manifest = match DisableDevices::contract().checked() {
            Ok(contract) => ProcedureManifest::new().with(ManifestEntry::declared(contract)),
            // A contract that does not check exposes nothing (and the
            // reference registers nothing): never a panic in the page.
            Err(_) => ProcedureManifest::new(),
        };
        PageBackend { fleet, manifest }
    }

    fn run(&self, input: serde_json::Value) -> Result<serde_json::Value, ProcedureError> {
        let input: DisableDevices = serde_json::from_value(input)
            .map_err(|err| ProcedureError::server("invalid-input", err.to_string()))?;
        if let Some(unknown) = input.device_ids.iter().find(|id| !self.fleet.exists(id)) {
            return Err(ProcedureError::server(
                "not-found",
                format!("no device {unknown}"),
            ));
        }
        let disabled = self.fleet.disable(&input.device_ids);
        serde_json::to_value(Disabled { disabled })
            .map_err(|err| ProcedureError::server("internal", err.to_string()))
    }
}

impl ProcedureExecutor for PageBackend {
    fn manifest(&self) -> &ProcedureManifest {
        &self.manifest
    }

    fn execute(&self, call: ProcedureCall) -> ExecuteFuture {
        let outcome = self.run(call.input);
        Box::pin(async move { outcome })
    }
}
