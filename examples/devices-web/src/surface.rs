//! The app's agent surface: what the agent may observe and do while each
//! part of the page is rendered. The filter bar and the table are mounted
//! by the devices page, the navigation by the app; each holds the shared
//! [`Fleet`], so handlers act on what the person sees.

use std::sync::Arc;

use agent_surface::prelude::*;

use crate::fleet::{Device, Filters, Fleet, Page};

/// The filter bar, as the agent sees it.
#[derive(Debug)]
pub struct FilterBar(pub Arc<Fleet>);

/// The filters above the device table.
#[agent_component(type = "fleet.filters")]
impl FilterBar {
    /// The active filters.
    #[observation]
    fn read(&self) -> Filters {
        self.0.filters()
    }

    /// Set the filters (both fields); devices no longer shown leave the selection.
    #[action(effect = "local-state", idempotent)]
    fn set(&self, input: Filters) -> Filters {
        self.0.set_filters(input);
        self.0.filters()
    }
}

/// What the table shows.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableState {
    /// The devices shown, in order.
    pub visible: Vec<Device>,
    /// The ids of the selected devices.
    pub selected: Vec<String>,
}

/// Devices to select.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Select {
    /// The ids of shown devices; the selection becomes exactly these.
    #[schemars(length(max = 100), inner(length(min = 1, max = 64)))]
    pub ids: Vec<String>,
}

/// The device table, as the agent sees it.
#[derive(Debug)]
pub struct Table(pub Arc<Fleet>);

/// The device table: rows, the person's ticks, and disabling the ticked
/// devices (the backend's `domain:devices.disable`, with `deviceIds` bound
/// to the ticks).
#[agent_component(type = "fleet.table")]
#[reference(crate::backend::DisableDevices, locked = [device_ids], when)]
impl Table {
    /// The devices shown and the selection.
    #[observation]
    fn read(&self) -> TableState {
        TableState {
            visible: self.0.visible(),
            selected: self.0.selected(),
        }
    }

    /// Select shown devices (replaces the selection).
    #[action(effect = "local-state", idempotent, precondition = all_shown)]
    fn select(&self, input: Select) {
        self.0.select(&input.ids);
    }

    fn all_shown(&self, input: &Select) -> Result<(), PreconditionFailure> {
        let hidden: Vec<&str> = input
            .ids
            .iter()
            .filter(|id| !self.0.is_visible(id))
            .map(String::as_str)
            .collect();
        if hidden.is_empty() {
            return Ok(());
        }
        Err(PreconditionFailure::new(format!(
            "Devices {} are not shown in the table; read the table and select shown ids",
            hidden.join(", ")
        ))
        .with_detail("reason", "not-visible")
        .with_detail("ids", hidden))
    }
}

/// A page to show.
#[agent_schema]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoTo {
    /// The page.
    pub page: Page,
}

/// The app's navigation, as the agent sees it.
#[derive(Debug)]
pub struct Navigation(pub Arc<Fleet>);

/// The app's navigation between its pages.
#[agent_component(type = "app.navigation")]
impl Navigation {
    /// The page shown.
    #[observation]
    fn current(&self) -> GoTo {
        GoTo {
            page: self.0.page(),
        }
    }

    /// Show another page (leaving the devices page takes its tools away).
    #[action(effect = "navigation", idempotent)]
    fn go_to(&self, input: GoTo) {
        self.0.go_to(input.page);
    }
}
