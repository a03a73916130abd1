//! The person's side of the console: what the web page reads and does with
//! its own controls (the agent goes through the components' capabilities).

use super::{
    Area, Console, DrawerState, Filters, SortDir, SortKey, Sorting, StatusFilter, TableState,
};
use crate::backend::Device;

impl Console {
    /// The active filters.
    pub fn filters(&self) -> Filters {
        self.state().filters.clone()
    }

    /// The table as the page shows it: rows with live data, the selection
    /// and the sorting.
    pub fn table(&self) -> TableState {
        let state = self.state();
        let visible_rows = state
            .rows
            .iter()
            .map(|row| self.backend.get(&row.id).unwrap_or_else(|| row.clone()))
            .collect();
        TableState {
            visible_rows,
            selected_ids: state.selected.clone(),
            sorting: state.sorting,
        }
    }

    /// The drawer's state.
    pub fn drawer(&self) -> DrawerState {
        let device_id = self.state().drawer.clone();
        DrawerState {
            is_open: device_id.is_some(),
            device_id,
        }
    }

    /// The device the drawer shows, if it is open.
    pub fn drawer_device(&self) -> Option<Device> {
        let id = self.state().drawer.clone()?;
        self.backend.get(&id)
    }

    /// Shows only devices of a status; the selection keeps visible rows.
    pub fn set_status_filter(&self, status: StatusFilter) {
        self.unmark(Area::Filters);
        self.state().filters.status = status;
        self.refresh();
    }

    /// Shows only devices of a city (`None`: every city).
    pub fn set_city_filter(&self, city: Option<String>) {
        self.unmark(Area::Filters);
        self.state().filters.city = city;
        self.refresh();
    }

    /// Ticks or unticks a visible row.
    pub fn toggle_selected(&self, id: &str) {
        self.unmark(Area::Selection);
        let mut state = self.state();
        if !state.rows.iter().any(|row| row.id == id) {
            return;
        }
        if let Some(index) = state.selected.iter().position(|s| s == id) {
            state.selected.remove(index);
        } else {
            state.selected.push(id.to_owned());
        }
    }

    /// Sorts by a column; the same column again flips the direction.
    pub fn sort_by(&self, by: SortKey) {
        self.unmark(Area::Sorting);
        let mut state = self.state();
        let dir = match (state.sorting.by == by, state.sorting.dir) {
            (true, SortDir::Asc) => SortDir::Desc,
            _ => SortDir::Asc,
        };
        state.sorting = Sorting { by, dir };
        let sorting = state.sorting;
        super::sort_rows(&mut state.rows, sorting);
    }

    /// Opens the drawer on a device.
    pub fn open_drawer(&self, id: &str) {
        if self.backend.get(id).is_some() {
            self.state().drawer = Some(id.to_owned());
        }
    }

    /// Closes the drawer.
    pub fn close_drawer(&self) {
        self.state().drawer = None;
    }
}
