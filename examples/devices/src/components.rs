//! The console's components and their agent surface.
//!
//! Each component holds the shared [`Console`] state; handlers read it live,
//! so what the agent sees is always what the user sees.

use std::sync::{Arc, Mutex, MutexGuard};

use agent_surface::prelude::*;
use serde::{Deserialize, Deserializer};

use crate::backend::{Backend, Device, Status};

mod marks;
mod person;

pub use marks::{AgentMarks, Area};

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
    /// City to show (Milan, Rome or Turin); null shows every city.
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
    /// By status.
    Status,
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

/// How a selection change combines with the current selection.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SelectMode {
    /// Replace the selection.
    #[default]
    Replace,
    /// Add to the selection.
    Add,
    /// Remove from the selection.
    Remove,
}

/// Change the row selection.
#[agent_schema]
#[derive(Clone, Debug)]
pub struct SelectRows {
    /// Ids of visible rows.
    #[schemars(length(min = 1, max = 100), inner(length(min = 1, max = 64)))]
    pub ids: Vec<String>,
    /// How to combine with the current selection.
    #[serde(default)]
    pub mode: SelectMode,
}

/// The drawer's state.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrawerState {
    /// Whether the drawer is open.
    pub is_open: bool,
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

impl Route {
    /// The route's path.
    pub fn path(self) -> &'static str {
        match self {
            Route::Devices => "/devices",
            Route::Settings => "/settings",
        }
    }
}

/// Where the application is.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentRoute {
    /// The current route.
    pub route: String,
}

/// Navigate to a route.
#[agent_schema]
#[derive(Clone, Debug)]
pub struct GoTo {
    /// Destination.
    pub route: Route,
}

#[derive(Debug)]
struct ConsoleState {
    route: Route,
    filters: Filters,
    rows: Vec<Device>,
    selected: Vec<String>,
    sorting: Sorting,
    drawer: Option<String>,
    /// The backend revision `rows` were queried at.
    seen: u64,
    /// What agents changed last.
    marks: AgentMarks,
}

type Navigator = Arc<dyn Fn(Route) + Send + Sync>;

/// The console's shared UI state, and its connection to the backend.
pub struct Console {
    backend: Arc<Backend>,
    state: Mutex<ConsoleState>,
    /// The host's router: mounts and unmounts pages.
    navigator: Mutex<Option<Navigator>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Console {
    /// A console on the devices page showing every device.
    pub fn new(backend: Arc<Backend>) -> Arc<Console> {
        let console = Console {
            backend,
            state: Mutex::new(ConsoleState {
                route: Route::Devices,
                filters: Filters::default(),
                rows: Vec::new(),
                selected: Vec::new(),
                sorting: Sorting::default(),
                drawer: None,
                seen: 0,
                marks: AgentMarks::default(),
            }),
            navigator: Mutex::new(None),
        };
        console.refresh();
        Arc::new(console)
    }

    /// Installs the host's router, called after the route changed.
    pub fn on_navigate(&self, navigate: impl Fn(Route) + Send + Sync + 'static) {
        *self
            .navigator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(navigate));
    }

    /// Changes the route and lets the router mount and unmount pages.
    pub fn navigate(&self, route: Route) {
        self.state().route = route;
        let navigator = self
            .navigator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(navigate) = navigator {
            navigate(route);
        }
    }

    fn state(&self) -> MutexGuard<'_, ConsoleState> {
        // A poisoned lock only means a handler panicked mid-update; the state
        // itself is plain data, so keep serving it.
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // The backend changed (a disable): what is shown and selected
        // follows at once, for the page and the agent alike.
        if state.seen != self.backend.revision() {
            Self::requery(&self.backend, &mut state);
        }
        state
    }

    /// Re-queries the backend with the current filters, keeps the sorting,
    /// and drops selected ids that are no longer visible.
    pub fn refresh(&self) {
        let mut state = self.state();
        Self::requery(&self.backend, &mut state);
    }

    fn requery(backend: &Backend, state: &mut ConsoleState) {
        state.seen = backend.revision();
        let mut rows = backend.query(state.filters.status.status(), state.filters.city.as_deref());
        sort_rows(&mut rows, state.sorting);
        state
            .selected
            .retain(|id| rows.iter().any(|row| &row.id == id));
        state.rows = rows;
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<Backend> {
        &self.backend
    }

    /// The current route.
    pub fn route(&self) -> Route {
        self.state().route
    }

    /// The selected ids.
    pub fn selected(&self) -> Vec<String> {
        self.state().selected.clone()
    }
}

fn sort_rows(rows: &mut [Device], sorting: Sorting) {
    rows.sort_by(|a, b| {
        let order = match sorting.by {
            SortKey::Name => a.name.cmp(&b.name),
            SortKey::Status => a.status.cmp(&b.status).then_with(|| a.name.cmp(&b.name)),
            SortKey::City => a.city.cmp(&b.city).then_with(|| a.name.cmp(&b.name)),
        };
        match sorting.dir {
            SortDir::Asc => order,
            SortDir::Desc => order.reverse(),
        }
    });
}

/// Who an agent is, as the page names it.
fn who(ctx: &ActionContext) -> &str {
    let consumer = ctx.consumer();
    consumer.label().unwrap_or(consumer.key())
}

/// The filter bar.
#[derive(Debug)]
pub struct FilterBar(pub Arc<Console>);

/// Filters that decide which devices the table shows.
#[agent_component(type = "devices.filters")]
impl FilterBar {
    /// The active filters.
    #[observation]
    fn read(&self) -> Filters {
        self.0.state().filters.clone()
    }

    /// Change the filters; the table then shows the matching devices. Omitted
    /// fields stay unchanged; `city: null` shows every city.
    #[action(effect = "local-state", idempotent)]
    fn set(&self, input: SetFilters, ctx: &ActionContext) -> Filters {
        self.0.marked_by_agent(Area::Filters, who(ctx));
        {
            let mut state = self.0.state();
            if let Some(status) = input.status {
                state.filters.status = status;
            }
            if let Some(city) = input.city {
                state.filters.city = city;
            }
        }
        self.0.refresh();
        self.0.state().filters.clone()
    }
}

/// The console's reference to `domain:devices.disable`: `deviceIds` is the
/// table's live selection, locked against the agent; available while
/// something is selected; visible only to signed-in users who may write
/// (the policies the table's `#[reference]` declares, installed on it).
pub fn disable_reference(console: &Arc<Console>) -> ProcedureRef<crate::domain::DisableDevices> {
    let selection = Arc::clone(console);
    let when = Arc::clone(console);
    let note = Arc::clone(console);
    ProcedureRef::<crate::domain::DisableDevices>::new()
        .bind(
            crate::domain::DisableDevices::fields().device_ids,
            move || selection.selected(),
        )
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

/// The devices table.
#[derive(Debug)]
pub struct DevicesTable(pub Arc<Console>);

/// Table of devices matching the active filters, with row selection.
#[agent_component(type = "devices.table")]
#[reference(
    crate::domain::DisableDevices,
    locked = [device_ids],
    when,
    policies = [
        agent_surface::policy::authenticated(),
        agent_surface::policy::has_permission(crate::domain::DEVICES_WRITE),
    ],
)]
impl DevicesTable {
    /// Visible rows, the current selection and the sorting.
    #[observation]
    fn read_state(&self) -> TableState {
        let state = self.0.state();
        // The rows stay those of the last query; their data is live.
        let visible_rows = state
            .rows
            .iter()
            .map(|row| self.0.backend.get(&row.id).unwrap_or_else(|| row.clone()))
            .collect();
        TableState {
            visible_rows,
            selected_ids: state.selected.clone(),
            sorting: state.sorting,
        }
    }

    /// Replace, extend or reduce the row selection. Only visible rows can be selected.
    #[action(effect = "local-state", precondition = ids_are_visible)]
    fn select_rows(&self, input: SelectRows, ctx: &ActionContext) {
        self.0.marked_by_agent(Area::Selection, who(ctx));
        let mut state = self.0.state();
        match input.mode {
            SelectMode::Replace => state.selected = input.ids,
            SelectMode::Add => {
                for id in input.ids {
                    if !state.selected.contains(&id) {
                        state.selected.push(id);
                    }
                }
            }
            SelectMode::Remove => state.selected.retain(|id| !input.ids.contains(id)),
        }
    }

    /// Sort the table.
    #[action(effect = "local-state", idempotent)]
    fn sort(&self, input: Sorting, ctx: &ActionContext) {
        self.0.marked_by_agent(Area::Sorting, who(ctx));
        let mut state = self.0.state();
        state.sorting = input;
        sort_rows(&mut state.rows, input);
    }

    fn ids_are_visible(&self, input: &SelectRows) -> Result<(), PreconditionFailure> {
        let state = self.0.state();
        let hidden: Vec<&String> = input
            .ids
            .iter()
            .filter(|id| !state.rows.iter().any(|row| &row.id == *id))
            .collect();
        if hidden.is_empty() {
            return Ok(());
        }
        let list: Vec<&str> = hidden.iter().map(|id| id.as_str()).collect();
        // The ids are the agent's: shown with their hidden characters made
        // visible (an escape sequence or a bidi override in a message
        // reaches whoever reads it).
        Err(PreconditionFailure::new(format!(
            "Devices {} are not visible in the table; read the table state and select visible ids",
            agent_surface::adapter::text::escape(&list.join(", "))
        ))
        .with_detail("reason", "not-visible")
        .with_detail("ids", list))
    }
}

/// The device detail drawer.
#[derive(Debug)]
pub struct Drawer(pub Arc<Console>);

/// Detail drawer showing one device.
#[agent_component(type = "devices.drawer")]
impl Drawer {
    /// Whether the drawer is open, and on which device.
    #[observation]
    fn state(&self) -> DrawerState {
        let device_id = self.0.state().drawer.clone();
        DrawerState {
            is_open: device_id.is_some(),
            device_id,
        }
    }

    /// Open the drawer on a device.
    #[action(effect = "local-state", precondition = device_exists)]
    fn open(&self, input: OpenDrawer) {
        self.0.state().drawer = Some(input.device_id);
    }

    /// Close the drawer.
    #[action(effect = "local-state", when = is_open, unavailable_reason = "The drawer is already closed")]
    fn close(&self) {
        self.0.state().drawer = None;
    }

    fn is_open(&self) -> bool {
        self.0.state().drawer.is_some()
    }

    fn device_exists(&self, input: &OpenDrawer) -> Result<(), PreconditionFailure> {
        match self.0.backend.get(&input.device_id) {
            Some(_) => Ok(()),
            None => Err(PreconditionFailure::new(format!(
                "There is no device {}; use an id from the table state",
                agent_surface::adapter::text::escape(&input.device_id)
            ))
            .with_detail("reason", "unknown-device")),
        }
    }
}

/// Application navigation.
#[derive(Debug)]
pub struct Navigation(pub Arc<Console>);

/// Application navigation between the devices and settings pages.
#[agent_component(type = "app.navigation")]
impl Navigation {
    /// The current route.
    #[observation]
    fn current(&self) -> CurrentRoute {
        CurrentRoute {
            route: self.0.state().route.path().to_owned(),
        }
    }

    /// Go to a page. Leaving /devices removes the devices components.
    #[action(effect = "navigation")]
    fn go_to(&self, input: GoTo) -> CurrentRoute {
        self.0.navigate(input.route);
        CurrentRoute {
            route: input.route.path().to_owned(),
        }
    }
}
