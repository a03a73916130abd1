//! The fleet: the page's in-memory backend (the devices, their cities and
//! statuses) and the state the person and the agent share (filters,
//! selection, the page shown). Both the rendered components and the
//! agent's handlers read and change it here, so what the agent sees is what
//! the person sees.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

use agent_surface::prelude::*;

/// Where a device is.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum City {
    /// Milan.
    Milan,
    /// Rome.
    Rome,
    /// Turin.
    Turin,
}

impl City {
    /// Every city, in the order the filter offers them.
    pub const ALL: [City; 3] = [City::Milan, City::Rome, City::Turin];

    /// The city's name.
    pub fn name(self) -> &'static str {
        match self {
            City::Milan => "Milan",
            City::Rome => "Rome",
            City::Turin => "Turin",
        }
    }
}

/// A device's state.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Reporting.
    Online,
    /// Not reporting.
    Offline,
    /// Stopped by an operator: it does not report until re-enabled.
    Disabled,
}

impl Status {
    /// The status as the table shows it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Online => "online",
            Status::Offline => "offline",
            Status::Disabled => "disabled",
        }
    }
}

/// One device of the fleet.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Its id (`dev-1` …).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Where it is.
    pub city: City,
    /// Its state.
    pub status: Status,
}

/// Which statuses the table shows.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatusFilter {
    /// Every device.
    #[default]
    All,
    /// Reporting devices only.
    Online,
    /// Devices not reporting (offline or disabled) only.
    Offline,
}

/// Which cities the table shows.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CityFilter {
    /// Every city.
    #[default]
    All,
    /// Milan only.
    Milan,
    /// Rome only.
    Rome,
    /// Turin only.
    Turin,
}

impl CityFilter {
    fn admits(self, city: City) -> bool {
        match self {
            CityFilter::All => true,
            CityFilter::Milan => city == City::Milan,
            CityFilter::Rome => city == City::Rome,
            CityFilter::Turin => city == City::Turin,
        }
    }
}

/// The table's filters.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    /// Statuses shown.
    pub status: StatusFilter,
    /// Cities shown.
    pub city: CityFilter,
}

impl Filters {
    fn admits(self, device: &Device) -> bool {
        let status = match self.status {
            StatusFilter::All => true,
            StatusFilter::Online => device.status == Status::Online,
            StatusFilter::Offline => device.status != Status::Online,
        };
        status && self.city.admits(device.city)
    }
}

/// The pages of the app.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Page {
    /// The device table and its filters.
    #[default]
    Devices,
    /// What the app is, and how the agent reaches it.
    About,
}

impl Page {
    /// The page's title.
    pub fn title(self) -> &'static str {
        match self {
            Page::Devices => "Devices",
            Page::About => "About",
        }
    }
}

/// What the person and the agent share.
#[derive(Debug)]
struct State {
    devices: Vec<Device>,
    filters: Filters,
    selected: BTreeSet<String>,
    /// The selected devices the agent chose (not the person's ticks): the
    /// person is told when they approve.
    agent_picked: BTreeSet<String>,
    page: Page,
}

/// The fleet and the page's state, shared by the rendered components and
/// the agent's handlers.
#[derive(Debug)]
pub struct Fleet {
    state: Mutex<State>,
}

/// The demo fleet: twelve devices over three cities.
fn demo_devices() -> Vec<Device> {
    const NAMES: [&str; 12] = [
        "Gateway",
        "Boiler",
        "Camera",
        "Thermostat",
        "Door lock",
        "Meter",
        "Router",
        "Sensor",
        "Pump",
        "Valve",
        "Display",
        "Beacon",
    ];
    NAMES
        .iter()
        .zip(1..)
        .zip(City::ALL.iter().cycle().skip(1))
        .map(|((name, n), city): ((&&str, usize), &City)| Device {
            id: format!("dev-{n}"),
            name: format!("{name} {n}"),
            city: *city,
            status: if n % 4 == 0 {
                Status::Offline
            } else {
                Status::Online
            },
        })
        .collect()
}

impl Default for Fleet {
    fn default() -> Self {
        Fleet::new(demo_devices())
    }
}

impl Fleet {
    /// A fleet of `devices`, unfiltered, nothing selected, on the devices page.
    pub fn new(devices: Vec<Device>) -> Self {
        Fleet {
            state: Mutex::new(State {
                devices,
                filters: Filters::default(),
                selected: BTreeSet::new(),
                agent_picked: BTreeSet::new(),
                page: Page::Devices,
            }),
        }
    }

    /// The state (a page has one thread: the lock is never contended, and
    /// a poisoned one still holds consistent data, as no change panics
    /// half-way).
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The filters.
    pub fn filters(&self) -> Filters {
        self.state().filters
    }

    /// Sets the filters; devices no longer shown leave the selection.
    pub fn set_filters(&self, filters: Filters) {
        let mut state = self.state();
        state.filters = filters;
        let State {
            devices, selected, ..
        } = &mut *state;
        selected.retain(|id| {
            devices
                .iter()
                .any(|device| &device.id == id && filters.admits(device))
        });
        let kept = selected.clone();
        state.agent_picked.retain(|id| kept.contains(id));
    }

    /// The devices the table shows, in order.
    pub fn visible(&self) -> Vec<Device> {
        let state = self.state();
        state
            .devices
            .iter()
            .filter(|device| state.filters.admits(device))
            .cloned()
            .collect()
    }

    /// Whether `id` is a device the table shows.
    pub fn is_visible(&self, id: &str) -> bool {
        let state = self.state();
        state
            .devices
            .iter()
            .any(|device| device.id == id && state.filters.admits(device))
    }

    /// The selected device ids, in order.
    pub fn selected(&self) -> Vec<String> {
        self.state().selected.iter().cloned().collect()
    }

    /// Whether `id` is selected.
    pub fn is_selected(&self, id: &str) -> bool {
        self.state().selected.contains(id)
    }

    /// Ticks or unticks `id` (only a shown device can be ticked).
    pub fn tick(&self, id: &str, ticked: bool) {
        if ticked && !self.is_visible(id) {
            return;
        }
        let mut state = self.state();
        if ticked {
            state.selected.insert(id.to_owned());
        } else {
            state.selected.remove(id);
        }
        // The person's own tick (or untick): no longer the agent's pick.
        state.agent_picked.remove(id);
    }

    /// Replaces the selection with the shown devices among `ids`: the
    /// agent's choice, not the person's ticks.
    pub fn select(&self, ids: &[String]) {
        let shown: BTreeSet<String> = ids
            .iter()
            .filter(|id| self.is_visible(id))
            .cloned()
            .collect();
        let mut state = self.state();
        state.agent_picked = shown.clone();
        state.selected = shown;
    }

    /// Whether `id` is selected because the agent chose it (the person did
    /// not tick it).
    pub fn picked_by_agent(&self, id: &str) -> bool {
        self.state().agent_picked.contains(id)
    }

    /// The device `id`.
    pub fn device(&self, id: &str) -> Option<Device> {
        self.state()
            .devices
            .iter()
            .find(|device| device.id == id)
            .cloned()
    }

    /// Whether a device `id` exists.
    pub fn exists(&self, id: &str) -> bool {
        self.state().devices.iter().any(|device| device.id == id)
    }

    /// Disables the devices `ids` (they leave the selection): how many
    /// changed state.
    pub fn disable(&self, ids: &[String]) -> usize {
        let mut state = self.state();
        let mut changed = 0;
        for device in &mut state.devices {
            if ids.contains(&device.id) && device.status != Status::Disabled {
                device.status = Status::Disabled;
                changed += 1;
            }
        }
        state.selected.retain(|id| !ids.contains(id));
        state.agent_picked.retain(|id| !ids.contains(id));
        changed
    }

    /// The page shown.
    pub fn page(&self) -> Page {
        self.state().page
    }

    /// Shows `page`.
    pub fn go_to(&self, page: Page) {
        self.state().page = page;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)] // test code

    use super::*;

    #[test]
    fn filters_drop_hidden_devices_from_the_selection() {
        let fleet = Fleet::default();
        fleet.tick("dev-1", true);
        fleet.tick("dev-2", true);
        let city = fleet.visible()[0].city;
        let only = match city {
            City::Milan => CityFilter::Milan,
            City::Rome => CityFilter::Rome,
            City::Turin => CityFilter::Turin,
        };
        fleet.set_filters(Filters {
            status: StatusFilter::All,
            city: only,
        });
        assert_eq!(fleet.selected(), vec!["dev-1".to_owned()]);
        assert_eq!(fleet.disable(&fleet.selected()), 1);
        assert!(fleet.selected().is_empty());
        fleet.tick("dev-2", true);
        assert!(
            fleet.selected().is_empty(),
            "a hidden device is never ticked"
        );
    }
}
