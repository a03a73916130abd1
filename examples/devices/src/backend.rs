//! The backend: it owns the devices and answers queries. The console only
//! ever holds copies of what it returned.

use std::sync::Mutex;

use agent_surface::prelude::*;

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

impl Status {
    /// The word a person reads: `online`, `offline`, `disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Online => "online",
            Status::Offline => "offline",
            Status::Disabled => "disabled",
        }
    }
}

/// A city where devices are installed.
pub type City = String;

/// One device of the fleet.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Device id (`d1`…`d12`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Current state.
    pub status: Status,
    /// Where it is installed.
    pub city: City,
}

/// The backend owning the fleet.
#[derive(Debug)]
pub struct Backend {
    devices: Mutex<Vec<Device>>,
    /// Moves whenever a device changes, so views know to query again.
    revision: std::sync::atomic::AtomicU64,
}

impl Backend {
    /// The demo fleet: twelve devices in Milan, Rome and Turin.
    pub fn demo() -> Backend {
        use Status::{Disabled, Offline, Online};
        let fleet = [
            ("d1", "Gateway Milano Centrale", Online, "Milan"),
            ("d2", "Air sensor Navigli", Offline, "Milan"),
            ("d3", "Camera Duomo", Offline, "Milan"),
            ("d4", "Thermostat Brera", Offline, "Milan"),
            ("d5", "Router Termini", Online, "Rome"),
            ("d6", "Air sensor Trastevere", Offline, "Rome"),
            ("d7", "Camera Colosseo", Online, "Rome"),
            ("d8", "Gateway Porta Nuova", Online, "Turin"),
            ("d9", "Air sensor Lingotto", Offline, "Turin"),
            ("d10", "Camera Mole", Disabled, "Turin"),
            ("d11", "Meter Isola", Online, "Milan"),
            ("d12", "Beacon Prati", Disabled, "Rome"),
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
            revision: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Devices matching a status and a city (`None` matches all).
    pub fn query(&self, status: Option<Status>, city: Option<&str>) -> Vec<Device> {
        self.devices
            .lock()
            .map(|devices| {
                devices
                    .iter()
                    .filter(|d| status.is_none_or(|s| d.status == s))
                    .filter(|d| city.is_none_or(|c| d.city.eq_ignore_ascii_case(c)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// One device.
    pub fn get(&self, id: &str) -> Option<Device> {
        self.devices
            .lock()
            .ok()
            .and_then(|devices| devices.iter().find(|d| d.id == id).cloned())
    }

    /// Disables devices; returns how many changed.
    pub fn disable(&self, ids: &[String]) -> usize {
        let Ok(mut devices) = self.devices.lock() else {
            return 0;
        };
        let mut changed = 0;
        for device in devices.iter_mut().filter(|d| ids.contains(&d.id)) {
            if device.status != Status::Disabled {
                device.status = Status::Disabled;
                changed += 1;
            }
        }
        if changed > 0 {
            self.revision
                .fetch_add(1, std::sync::atomic::Ordering::Release);
        }
        changed
    }

    /// Moves whenever a device changed.
    pub fn revision(&self) -> u64 {
        self.revision.load(std::sync::atomic::Ordering::Acquire)
    }
}
