//! The fixture's backend: a fleet of devices, the `domain:devices.disable`
//! procedure it exposes, and the in-process executor that runs it for one
//! signed-in user, re-checking the user's permission and the input itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_surface::prelude::*;
use agent_surface::procedure::{
    ExecuteFuture, ManifestEntry, Procedure, ProcedureCall, ProcedureError, ProcedureExecutor,
    ProcedureManifest,
};
use serde_json::{Value, json};

/// A device's state.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Reachable and running.
    Online,
    /// Not reachable.
    Offline,
    /// Switched off by an operator.
    Disabled,
}

/// One device of the fleet.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Device id (`d1`…`d8`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Current state.
    pub status: Status,
    /// Where it is installed.
    pub city: String,
}

/// The backend owning the fleet.
#[derive(Debug)]
pub struct Backend {
    devices: Mutex<Vec<Device>>,
    /// Moves whenever a device changes, so views know to query again.
    revision: AtomicU64,
}

impl Backend {
    /// Eight devices in Milan and Rome: `d2`…`d4` offline in Milan.
    pub fn fleet() -> Backend {
        use Status::{Disabled, Offline, Online};
        let fleet = [
            ("d1", "Gateway Centrale", Online, "Milan"),
            ("d2", "Air sensor Navigli", Offline, "Milan"),
            ("d3", "Camera Duomo", Offline, "Milan"),
            ("d4", "Thermostat Brera", Offline, "Milan"),
            ("d5", "Router Termini", Online, "Rome"),
            ("d6", "Air sensor Trastevere", Offline, "Rome"),
            ("d7", "Camera Colosseo", Online, "Rome"),
            ("d8", "Beacon Prati", Disabled, "Rome"),
        ];
        let devices = fleet
            .into_iter()
            .map(|(id, name, status, city)| Device {
                id: id.to_owned(),
                name: name.to_owned(),
                status,
                city: city.to_owned(),
            })
            .collect();
        Backend {
            devices: Mutex::new(devices),
            revision: AtomicU64::new(0),
        }
    }

    fn devices(&self) -> std::sync::MutexGuard<'_, Vec<Device>> {
        self.devices.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Devices matching a status and a city (`None` matches all).
    pub fn query(&self, status: Option<Status>, city: Option<&str>) -> Vec<Device> {
        self.devices()
            .iter()
            .filter(|d| status.is_none_or(|s| d.status == s))
            .filter(|d| city.is_none_or(|c| d.city.eq_ignore_ascii_case(c)))
            .cloned()
            .collect()
    }

    /// One device.
    pub fn get(&self, id: &str) -> Option<Device> {
        self.devices().iter().find(|d| d.id == id).cloned()
    }

    /// Disables devices; how many changed.
    pub fn disable(&self, ids: &[String]) -> usize {
        let mut changed = 0;
        for device in self.devices().iter_mut().filter(|d| ids.contains(&d.id)) {
            if device.status != Status::Disabled {
                device.status = Status::Disabled;
                changed += 1;
            }
        }
        if changed > 0 {
            self.revision.fetch_add(1, Ordering::Release);
        }
        changed
    }

    /// Moves whenever a device changed.
    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::Acquire)
    }
}

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

/// The permission disabling devices needs.
pub const DEVICES_WRITE: &str = "devices:write";

/// A signed-in user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// The user id.
    pub id: String,
    /// What the user may do.
    pub permissions: Vec<String>,
}

impl User {
    /// The administrator: may read and disable devices.
    pub fn admin() -> User {
        User {
            id: "admin".to_owned(),
            permissions: vec!["devices:read".to_owned(), DEVICES_WRITE.to_owned()],
        }
    }

    /// The viewer: may only read.
    pub fn viewer() -> User {
        User {
            id: "viewer".to_owned(),
            permissions: vec!["devices:read".to_owned()],
        }
    }

    /// The host context the registry's policies read.
    pub fn host(&self) -> HostContext {
        HostContext::new().with(
            "user",
            json!({"id": self.id, "permissions": self.permissions}),
        )
    }

    fn may(&self, permission: &str) -> bool {
        self.permissions.iter().any(|p| p == permission)
    }
}

/// The backend's side of the procedure, for one user: it records every
/// call it receives and decides for itself.
pub struct FleetExecutor {
    backend: Arc<Backend>,
    user: User,
    manifest: ProcedureManifest,
    received: Mutex<Vec<Value>>,
}

impl FleetExecutor {
    /// The executor of `user`'s session on `backend`.
    pub fn new(backend: Arc<Backend>, user: User) -> FleetExecutor {
        let contract = DisableDevices::contract()
            .checked()
            .expect("the procedure's contract checks");
        FleetExecutor {
            backend,
            user,
            manifest: ProcedureManifest::new().with(ManifestEntry::declared(contract)),
            received: Mutex::default(),
        }
    }

    /// The inputs of every call the backend received, in order.
    pub fn received(&self) -> Vec<Value> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn run(&self, input: Value) -> Result<Value, ProcedureError> {
        if !self.user.may(DEVICES_WRITE) {
            return Err(ProcedureError::server(
                "forbidden",
                format!("{} may not disable devices", self.user.id),
            ));
        }
        let input: DisableDevices = serde_json::from_value(input)
            .map_err(|err| ProcedureError::server("invalid-input", err.to_string()))?;
        if input
            .device_ids
            .iter()
            .any(|id| self.backend.get(id).is_none())
        {
            return Err(ProcedureError::server("not-found", "unknown devices"));
        }
        let disabled = self.backend.disable(&input.device_ids);
        Ok(json!({"disabled": disabled}))
    }
}

impl ProcedureExecutor for FleetExecutor {
    fn manifest(&self) -> &ProcedureManifest {
        &self.manifest
    }

    fn execute(&self, call: ProcedureCall) -> ExecuteFuture {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call.input.clone());
        let outcome = self.run(call.input);
        Box::pin(async move { outcome })
    }
}
