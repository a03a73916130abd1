//! The fixture's components: a filter bar, a devices table with a row
//! selection and its reference to `domain:devices.disable` (locked to the
//! selection, available while rows are selected, visible only to users who
//! may write), a detail drawer, and the navigation whose router unmounts
//! the devices page away from `/devices`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_surface::prelude::*;
use serde::{Deserialize, Deserializer};

use super::fleet::{Backend, Device, DisableDevices, Status};

/// Which statuses the table shows.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatusFilter {
    /// Every device.
    #[default]
    All,
    /// Online devices only.
    Online,
    /// Offline devices only.
    Offline,
}

impl StatusFilter {
    fn status(self) -> Option<Status> {
        match self {
            StatusFilter::All => None,
            StatusFilter::Online => Some(Status::Online),
            StatusFilter::Offline => Some(Status::Offline),
        }
    }
}

/// The active filters.
#[agent_schema]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    /// Statuses shown.
    pub status: StatusFilter,
    /// City shown; null when every city is shown.
    pub city: Option<String>,
}

/// Change the filters; omitted fields stay as they are.
#[agent_schema]
#[derive(Clone, Debug, Default)]
pub struct SetFilters {
    /// Statuses to show.
    #[serde(default)]
    pub status: Option<StatusFilter>,
    /// City to show; null shows every city.
    #[serde(default, deserialize_with = "present")]
    #[schemars(length(max = 64))]
    pub city: Option<Option<String>>,
}

/// Distinguishes an explicit `null` (clear) from an absent field (keep).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// Column the table is sorted by.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortKey {
    /// By name.
    #[default]
    Name,
    /// By city.
    City,
}

/// Sort direction.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortDir {
    /// Ascending.
    #[default]
    Asc,
    /// Descending.
    Desc,
}

/// How the table is sorted.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sorting {
    /// Column.
    pub by: SortKey,
    /// Direction.
    pub dir: SortDir,
}

/// What the table shows.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableState {
    /// Rows matching the filters, in display order.
    pub visible_rows: Vec<Device>,
    /// Ids of the selected rows.
    pub selected_ids: Vec<String>,
    /// Current sorting.
    pub sorting: Sorting,
}

/// Replace the row selection.
#[agent_schema]
#[derive(Clone, Debug)]
pub struct SelectRows {
    /// Ids of visible rows.
    #[schemars(length(min = 1, max = 100), inner(length(min = 1, max = 64)))]
    pub ids: Vec<String>,
}

/// The drawer's state.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrawerState {
    /// The device it shows, if open.
    pub device_id: Option<String>,
}

/// Open the drawer on a device.
#[agent_schema]
#[derive(Clone, Debug)]
pub struct OpenDrawer {
    /// Device id.
    #[schemars(length(min = 1, max = 64))]
    pub device_id: String,
}

/// A route of the application.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
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
pub struct GoTo {
    /// Destination.
    pub route: Route,
}

#[derive(Debug)]
struct State {
    route: Route,
    filters: Filters,
    rows: Vec<Device>,
    selected: Vec<String>,
    sorting: Sorting,
    drawer: Option<String>,
    /// The backend revision `rows` were queried at.
    seen: u64,
}

type Router = Arc<dyn Fn(Route) + Send + Sync>;

/// The console's shared state over the backend, and the host's router.
pub struct Console {
    backend: Arc<Backend>,
    state: Mutex<State>,
    router: Mutex<Option<Router>>,
}

impl Console {
    /// A console on the devices page showing every device.
    pub fn new(backend: Arc<Backend>) -> Arc<Console> {
        let console = Console {
            backend,
            state: Mutex::new(State {
                route: Route::Devices,
                filters: Filters::default(),
                rows: Vec::new(),
                selected: Vec::new(),
                sorting: Sorting::default(),
                drawer: None,
                seen: u64::MAX,
            }),
            router: Mutex::new(None),
        };
        drop(console.state());
        Arc::new(console)
    }

    /// Installs the host's router, called after the route changed.
    pub fn on_navigate(&self, route: impl Fn(Route) + Send + Sync + 'static) {
        *self.router.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(route));
    }

    /// Changes the route and lets the router mount and unmount pages.
    pub fn navigate(&self, route: Route) {
        self.state().route = route;
        let router = self
            .router
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(router) = router {
            router(route);
        }
    }

    /// The selected ids.
    pub fn selected(&self) -> Vec<String> {
        self.state().selected.clone()
    }

    /// The state, re-queried first when the backend changed.
    fn state(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.seen != self.backend.revision() {
            Self::requery(&self.backend, &mut state);
        }
        state
    }

    fn requery(backend: &Backend, state: &mut State) {
        state.seen = backend.revision();
        let mut rows = backend.query(state.filters.status.status(), state.filters.city.as_deref());
        sort_rows(&mut rows, state.sorting);
        state
            .selected
            .retain(|id| rows.iter().any(|row| &row.id == id));
        state.rows = rows;
    }
}

fn sort_rows(rows: &mut [Device], sorting: Sorting) {
    rows.sort_by(|a, b| {
        let order = match sorting.by {
            SortKey::Name => a.name.cmp(&b.name),
            SortKey::City => a.city.cmp(&b.city).then_with(|| a.name.cmp(&b.name)),
        };
        match sorting.dir {
            SortDir::Asc => order,
            SortDir::Desc => order.reverse(),
        }
    });
}

/// The filter bar.
pub struct FilterBar(pub Arc<Console>);

/// Filters that decide which devices the table shows.
#[agent_component(type = "devices.filters")]
impl FilterBar {
    /// The active filters.
    #[observation]
    fn read(&self) -> Filters {
        self.0.state().filters.clone()
    }

    /// Change the filters. Omitted fields stay; `city: null` shows every city.
    #[action(effect = "local-state", idempotent)]
    fn set(&self, input: SetFilters) -> Filters {
        let mut state = self.0.state();
        if let Some(status) = input.status {
            state.filters.status = status;
        }
        if let Some(city) = input.city {
            state.filters.city = city;
        }
        Console::requery(&self.0.backend, &mut state);
        state.filters.clone()
    }
}

/// The devices table.
pub struct DevicesTable(pub Arc<Console>);

/// Table of devices matching the active filters, with row selection.
#[agent_component(type = "devices.table")]
#[reference(
    crate::support::fleet::DisableDevices,
    locked = [device_ids],
    when,
    policies = [
        agent_surface::policy::authenticated(),
        agent_surface::policy::has_permission(crate::support::fleet::DEVICES_WRITE),
    ],
)]
impl DevicesTable {
    /// Visible rows, the current selection and the sorting.
    #[observation]
    fn read_state(&self) -> TableState {
        let state = self.0.state();
        TableState {
            visible_rows: state.rows.clone(),
            selected_ids: state.selected.clone(),
            sorting: state.sorting,
        }
    }

    /// Replace the row selection. Only visible rows can be selected.
    #[action(effect = "local-state", precondition = ids_are_visible)]
    fn select_rows(&self, input: SelectRows) {
        self.0.state().selected = input.ids;
    }

    /// Sort the table.
    #[action(effect = "local-state", idempotent)]
    fn sort(&self, input: Sorting) {
        let mut state = self.0.state();
        state.sorting = input;
        sort_rows(&mut state.rows, input);
    }

    fn ids_are_visible(&self, input: &SelectRows) -> Result<(), PreconditionFailure> {
        let state = self.0.state();
        let hidden: Vec<&str> = input
            .ids
            .iter()
            .filter(|id| !state.rows.iter().any(|row| &row.id == *id))
            .map(String::as_str)
            .collect();
        if hidden.is_empty() {
            return Ok(());
        }
        Err(PreconditionFailure::new(format!(
            "Devices {} are not visible in the table",
            hidden.join(", ")
        ))
        .with_detail("reason", "not-visible"))
    }
}

/// The reference the table mounts with: `deviceIds` is the live selection,
/// locked against the agent; available while something is selected.
pub fn disable_reference(console: &Arc<Console>) -> ProcedureRef<DisableDevices> {
    let selection = Arc::clone(console);
    let when = Arc::clone(console);
    ProcedureRef::<DisableDevices>::new()
        .bind(DisableDevices::fields().device_ids, move || {
            selection.selected()
        })
        .when(move || !when.selected().is_empty())
        .unavailable_reason("Select at least one device first")
}

/// The device detail drawer.
pub struct Drawer(pub Arc<Console>);

/// Detail drawer showing one device.
#[agent_component(type = "devices.drawer")]
impl Drawer {
    /// Which device the drawer shows, if open.
    #[observation]
    fn state(&self) -> DrawerState {
        DrawerState {
            device_id: self.0.state().drawer.clone(),
        }
    }

    /// Open the drawer on a device.
    #[action(effect = "local-state", precondition = device_exists)]
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

    fn device_exists(&self, input: &OpenDrawer) -> Result<(), PreconditionFailure> {
        match self.0.backend.get(&input.device_id) {
            Some(_) => Ok(()),
            None => Err(PreconditionFailure::new("There is no such device")),
        }
    }
}

/// Application navigation.
pub struct Navigation(pub Arc<Console>);

/// Navigation between the devices and settings pages.
#[agent_component(type = "app.navigation")]
impl Navigation {
    /// The current route.
    #[observation]
    fn current(&self) -> Route {
        self.0.state().route
    }

    /// Go to a page. Leaving /devices removes the devices components.
    #[action(effect = "navigation")]
    fn go_to(&self, input: GoTo) -> Route {
        self.0.navigate(input.route);
        input.route
    }
}
