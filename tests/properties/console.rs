//! The properties' fixture console: a filter bar, a devices table with a
//! row selection and a reference to `domain:devices.disable`, a detail
//! drawer and the navigation — every kind of schema an application's
//! surface has (enums, optional and nullable fields, nested lists, bounds).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_surface::prelude::*;
use agent_surface::registry::{Mounted, Registry};

/// A device's state.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Reachable and running.
    Online,
    /// Not reachable.
    Offline,
    /// Switched off by an operator.
    Disabled,
}

/// One device.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Device {
    /// Device id.
    pub(crate) id: String,
    /// Display name.
    pub(crate) name: String,
    /// Current state.
    pub(crate) status: Status,
}

/// The active filters.
#[agent_schema]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Filters {
    /// Status shown; null shows every status.
    pub(crate) status: Option<Status>,
    /// City shown; null shows every city.
    pub(crate) city: Option<String>,
}

/// Change the filters; omitted fields stay as they are.
#[agent_schema]
#[derive(Clone, Debug, Default)]
pub(crate) struct SetFilters {
    /// Status to show.
    #[serde(default)]
    pub(crate) status: Option<Status>,
    /// City to show.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub(crate) city: Option<String>,
}

/// Sort direction.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SortDir {
    /// Ascending.
    #[default]
    Asc,
    /// Descending.
    Desc,
}

/// How the table is sorted.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sorting {
    /// Direction by name.
    pub(crate) dir: SortDir,
}

/// What the table shows.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableState {
    /// Rows matching the filters, in display order.
    pub(crate) visible_rows: Vec<Device>,
    /// Ids of the selected rows.
    pub(crate) selected_ids: Vec<String>,
    /// Sort direction by name.
    pub(crate) dir: SortDir,
}

/// How a selection change combines with the current selection.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SelectMode {
    /// Replace the selection.
    #[default]
    Replace,
    /// Add to the selection.
    Add,
}

/// Change the row selection.
#[agent_schema]
#[derive(Clone, Debug)]
pub(crate) struct SelectRows {
    /// Ids of visible rows.
    #[schemars(length(min = 1, max = 100), inner(length(min = 1, max = 64)))]
    pub(crate) ids: Vec<String>,
    /// How to combine with the current selection.
    #[serde(default)]
    pub(crate) mode: SelectMode,
}

/// Open the drawer on a device.
#[agent_schema]
#[derive(Clone, Debug)]
pub(crate) struct OpenDrawer {
    /// Device id.
    #[schemars(length(min = 1, max = 64))]
    pub(crate) device_id: String,
}

/// A route of the application.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// The devices page.
    #[serde(rename = "/devices")]
    Devices,
    /// The settings page.
    #[serde(rename = "/settings")]
    Settings,
}

/// Navigate to a route.
#[agent_schema]
#[derive(Clone, Debug)]
pub(crate) struct GoTo {
    /// Destination.
    pub(crate) route: Route,
}

/// The result of disabling devices.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Disabled {
    /// How many devices changed state.
    pub(crate) disabled: u32,
}

/// Disable devices: they stop reporting until an operator re-enables them.
#[agent_procedure(id = "domain:devices.disable", effect = "destructive", output = Disabled)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DisableDevices {
    /// The devices to disable.
    #[schemars(length(min = 1, max = 100), inner(length(min = 1, max = 64)))]
    pub(crate) device_ids: Vec<String>,
    /// Why they are disabled, for the audit trail.
    #[schemars(length(max = 500))]
    pub(crate) reason: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    filters: Filters,
    selected: Vec<String>,
    dir: SortDir,
    drawer: Option<String>,
    route: Option<Route>,
}

/// The console's shared state over a fixed fleet.
#[derive(Debug, Default)]
pub(crate) struct Console {
    state: Mutex<State>,
}

impl Console {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn rows(&self) -> Vec<Device> {
        let status = self.state().filters.status;
        [
            ("d1", "Gateway", Status::Online),
            ("d2", "Air sensor", Status::Offline),
            ("d3", "Camera", Status::Disabled),
        ]
        .into_iter()
        .filter(|(_, _, s)| status.is_none_or(|status| status == *s))
        .map(|(id, name, status)| Device {
            id: id.to_owned(),
            name: name.to_owned(),
            status,
        })
        .collect()
    }
}

/// The filter bar.
pub(crate) struct FilterBar(Arc<Console>);

/// Filters that decide which devices the table shows.
#[agent_component(type = "devices.filters")]
impl FilterBar {
    /// The active filters.
    #[observation]
    fn read(&self) -> Filters {
        self.0.state().filters.clone()
    }

    /// Change the filters.
    #[action(effect = "local-state", idempotent)]
    fn set(&self, input: SetFilters) -> Filters {
        let mut state = self.0.state();
        state.filters.status = input.status.or(state.filters.status);
        state.filters.city = input.city.or(state.filters.city.take());
        state.filters.clone()
    }
}

/// The devices table.
pub(crate) struct DevicesTable(Arc<Console>);

/// Table of devices matching the filters, with row selection.
#[agent_component(type = "devices.table")]
#[reference(
    crate::console::DisableDevices,
    locked = [device_ids],
    when,
    policies = [
        agent_surface::policy::authenticated(),
        agent_surface::policy::has_permission("devices:write"),
    ],
)]
impl DevicesTable {
    /// Visible rows, the selection and the sorting.
    #[observation]
    fn read_state(&self) -> TableState {
        let visible_rows = self.0.rows();
        let state = self.0.state();
        TableState {
            visible_rows,
            selected_ids: state.selected.clone(),
            dir: state.dir,
        }
    }

    /// Replace or extend the row selection.
    #[action(effect = "local-state")]
    fn select_rows(&self, input: SelectRows) {
        let mut state = self.0.state();
        match input.mode {
            SelectMode::Replace => state.selected = input.ids,
            SelectMode::Add => state.selected.extend(input.ids),
        }
    }

    /// Sort the table by name.
    #[action(effect = "local-state", idempotent)]
    fn sort(&self, input: Sorting) {
        self.0.state().dir = input.dir;
    }
}

/// The device drawer.
pub(crate) struct Drawer(Arc<Console>);

/// Detail drawer showing one device.
#[agent_component(type = "devices.drawer")]
impl Drawer {
    /// The device shown, if open.
    #[observation]
    fn state(&self) -> Option<String> {
        self.0.state().drawer.clone()
    }

    /// Open the drawer on a device.
    #[action(effect = "local-state")]
    fn open(&self, input: OpenDrawer) {
        self.0.state().drawer = Some(input.device_id);
    }

    /// Close the drawer.
    #[action(effect = "local-state", when = is_open, unavailable_reason = "The drawer is closed")]
    fn close(&self) {
        self.0.state().drawer = None;
    }

    fn is_open(&self) -> bool {
        self.0.state().drawer.is_some()
    }
}

/// Application navigation.
pub(crate) struct Navigation(Arc<Console>);

/// Navigation between the devices and settings pages.
#[agent_component(type = "app.navigation")]
impl Navigation {
    /// The current route.
    #[observation]
    fn current(&self) -> Route {
        self.0.state().route.unwrap_or(Route::Devices)
    }

    /// Go to a page.
    #[action(effect = "navigation")]
    fn go_to(&self, input: GoTo) -> Route {
        self.0.state().route = Some(input.route);
        input.route
    }
}

/// Mounts the console on `registry`: the filter bar, the table with its
/// reference (`deviceIds` bound to the selection, available while rows are
/// selected, visible to signed-in users who may write), the drawer and the
/// navigation. Dropping the handles unmounts.
pub(crate) fn mount(registry: &Registry) -> Vec<Mounted> {
    let console = Arc::new(Console::default());
    let selection = Arc::clone(&console);
    let when = Arc::clone(&console);
    let reference = ProcedureRef::<DisableDevices>::new()
        .bind(DisableDevices::fields().device_ids, move || {
            selection.state().selected.clone()
        })
        .when(move || !when.state().selected.is_empty())
        .unavailable_reason("Select at least one device first");
    vec![
        registry
            .mount(Arc::new(FilterBar(Arc::clone(&console))))
            .unwrap(),
        registry
            .mounting(Arc::new(DevicesTable(Arc::clone(&console))))
            .procedure(reference)
            .mount()
            .unwrap(),
        registry
            .mount(Arc::new(Drawer(Arc::clone(&console))))
            .unwrap(),
        registry.mount(Arc::new(Navigation(console))).unwrap(),
    ]
}
