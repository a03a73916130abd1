//! The console's Dioxus components. Each one that the agent may use mounts
//! its agent face with the binding's hooks while it is rendered: leaving
//! /devices unmounts the filters, the table (with its reference to
//! `domain:devices.disable`) and the drawer; ticking rows re-renders the
//! table, whose re-render pushes the disable procedure's availability.

use std::sync::Arc;

use agent_surface_dioxus::{
    WebMcpState, use_agent_component, use_agent_mount, use_surface_revision, use_webmcp,
};
use dioxus::prelude::*;

use super::agent_panel::AgentPanel;
use super::dialog::ConfirmDialog;
use super::watch::{Revision, use_watch};
use super::{OpenedOn, Shared, TabId};
use crate::components::disable_reference;
use crate::components::{
    Console, DevicesTable, Drawer, FilterBar, Navigation, Route, SortDir, SortKey, StatusFilter,
};

/// Moves when the person acted in this tab.
#[derive(Clone, Copy)]
pub(crate) struct Tick(Signal<u64>);

impl Tick {
    /// The person changed the console's state: re-render what shows it.
    pub(crate) fn bump(mut self) {
        let next = self.0.peek().wrapping_add(1);
        self.0.set(next);
    }
}

/// Subscribes the calling component to both the agent's and the person's
/// changes.
fn use_refresh() -> Tick {
    let revision = use_context::<Revision>();
    let tick = use_context::<Tick>();
    let _ = (revision.0)();
    let _ = (tick.0)();
    tick
}

fn use_console() -> Arc<Console> {
    Arc::clone(use_context::<Shared>().app.console())
}

/// A tab's root: the console when this tab is in front, a notice otherwise.
pub(crate) fn root() -> Element {
    let shared = use_context::<Shared>();
    let tab = use_context::<TabId>();
    let opened = use_context::<OpenedOn>();
    let tabs = Arc::clone(&shared.tabs);
    let active = use_watch(move || tabs.active.subscribe());
    let console = Arc::clone(shared.app.console());
    use_hook(move || {
        if let Some(route) = opened.0 {
            console.navigate(route);
        }
    });
    let revision = use_surface_revision();
    use_context_provider(|| Revision(revision));
    use_context_provider(|| Tick(Signal::new(0)));
    use_context_provider(|| super::passkey_offer::PasskeysChanged(Signal::new(0)));
    if active() != tab.0 {
        let tabs = Arc::clone(&shared.tabs);
        return rsx! {
            div { class: "elsewhere",
                h1 { "Devices console" }
                p { "The console is open in another tab; the agent sees that tab's components." }
                button { id: "take-over", onclick: move |_| tabs.take_over(tab.0), "Use it here" }
                form { class: "sign-out", method: "post", action: "/logout",
                    button { id: "sign-out", r#type: "submit", "Sign out" }
                }
            }
        };
    }
    rsx! { ConsoleView {} }
}

#[component]
fn ConsoleView() -> Element {
    let shared = use_context::<Shared>();
    let tab = use_context::<TabId>();
    let console = use_console();
    let tick = use_refresh();
    let navigation = Arc::clone(&console);
    let _navigation = use_agent_component(move || Arc::new(Navigation(navigation)));
    // The agent in this browser (WebMCP), served while this tab is in
    // front; where the browser has no `document.modelContext`, nothing.
    let webmcp = use_webmcp(move || format!("tab-{}", tab.0), "In-page agent");
    let in_page = webmcp() == WebMcpState::Serving;
    let route = console.route();
    // Keep the address bar on the console's route, whoever navigated.
    let mut shown = use_signal(|| None::<Route>);
    if *shown.peek() != Some(route) {
        shown.set(Some(route));
        let _ = document::eval(&format!(
            "history.replaceState(null, '', '{}')",
            route.path()
        ));
    }
    let to_devices = Arc::clone(&console);
    let to_settings = Arc::clone(&console);
    let user = shared.app.user().id.clone();
    rsx! {
        header {
            h1 { "Devices console" }
            nav {
                button {
                    id: "nav-devices",
                    class: if route == Route::Devices { "active" },
                    onclick: move |_| {
                        to_devices.navigate(Route::Devices);
                        tick.bump();
                    },
                    "Devices"
                }
                button {
                    id: "nav-settings",
                    class: if route == Route::Settings { "active" },
                    onclick: move |_| {
                        to_settings.navigate(Route::Settings);
                        tick.bump();
                    },
                    "Settings"
                }
            }
            span { class: "user", "Signed in as {user}" }
            // A plain form: the browser posts it to the console itself,
            // which ends this browser's session.
            form { class: "sign-out", method: "post", action: "/logout",
                button { id: "sign-out", r#type: "submit", "Sign out" }
            }
        }
        div { class: "layout",
            main {
                super::passkey_offer::PasskeyOffer {}
                match route {
                    Route::Devices => rsx! { DevicesPage {} },
                    Route::Settings => rsx! { SettingsPage {} },
                }
            }
            AgentPanel { in_page }
        }
        ConfirmDialog {}
    }
}

#[component]
fn DevicesPage() -> Element {
    rsx! {
        FilterBarView {}
        TableView {}
        DrawerView {}
    }
}

#[component]
fn SettingsPage() -> Element {
    rsx! {
        section { id: "settings",
            h2 { "Settings" }
            p { "Nothing to configure in this demo. While you are here the devices page is not rendered, so its tools are gone from every agent's list; go back to Devices and they return." }
        }
    }
}

fn status_filter_value(filter: StatusFilter) -> &'static str {
    match filter {
        StatusFilter::All => "all",
        StatusFilter::Online => "online",
        StatusFilter::Offline => "offline",
    }
}

#[component]
fn FilterBarView() -> Element {
    let console = use_console();
    let tick = use_refresh();
    let face = Arc::clone(&console);
    let _filters = use_agent_component(move || Arc::new(FilterBar(face)));
    let filters = console.filters();
    let status = status_filter_value(filters.status);
    let city = filters.city.clone().unwrap_or_default();
    let by_status = Arc::clone(&console);
    let by_city = Arc::clone(&console);
    let marked = console.marks().filters;
    rsx! {
        section { class: "filters", "aria-label": "Filters",
            if let Some(who) = marked {
                span { id: "filters-mark", class: "mark", "Set by {who}" }
            }
            label { "Status "
                select {
                    id: "status-filter",
                    onchange: move |event| {
                        let status = match event.value().as_str() {
                            "online" => StatusFilter::Online,
                            "offline" => StatusFilter::Offline,
                            _ => StatusFilter::All,
                        };
                        by_status.set_status_filter(status);
                        tick.bump();
                    },
                    for (value, label) in [("all", "All"), ("online", "Online"), ("offline", "Offline")] {
                        option { value, selected: status == value, "{label}" }
                    }
                }
            }
            label { "City "
                select {
                    id: "city-filter",
                    onchange: move |event| {
                        let value = event.value();
                        by_city.set_city_filter((!value.is_empty()).then_some(value));
                        tick.bump();
                    },
                    for (value, label) in [("", "All cities"), ("Milan", "Milan"), ("Rome", "Rome"), ("Turin", "Turin")] {
                        option { value, selected: city.eq_ignore_ascii_case(value), "{label}" }
                    }
                }
            }
        }
    }
}

#[component]
fn TableView() -> Element {
    let console = use_console();
    let tick = use_refresh();
    let face = Arc::clone(&console);
    // The table and its reference to the backend's disable procedure,
    // `deviceIds` bound to the selection: available while rows are ticked.
    let _table = use_agent_mount((), move |registry| {
        registry
            .mounting(Arc::new(DevicesTable(Arc::clone(&face))))
            .procedure(disable_reference(&face))
            .mount()
    });
    let table = console.table();
    let marks = console.marks();
    let selected = table.selected_ids.clone();
    let summary = if selected.is_empty() {
        "Nothing selected".to_owned()
    } else {
        let names: Vec<String> = selected
            .iter()
            .map(|id| {
                console
                    .backend()
                    .get(id)
                    .map_or_else(|| id.clone(), |device| device.name)
            })
            .collect();
        format!("{} selected: {}", selected.len(), names.join(", "))
    };
    let sorting = table.sorting;
    let aria_sort = move |key: SortKey| match (sorting.by == key, sorting.dir) {
        (false, _) => "none",
        (true, SortDir::Asc) => "ascending",
        (true, SortDir::Desc) => "descending",
    };
    let arrow = move |key: SortKey| match (sorting.by == key, sorting.dir) {
        (false, _) => "",
        (true, SortDir::Asc) => " ▲",
        (true, SortDir::Desc) => " ▼",
    };
    let rows = table.visible_rows.into_iter().map(|device| {
        let is_selected = selected.contains(&device.id);
        let status = device.status.as_str();
        let toggle = Arc::clone(&console);
        let open = Arc::clone(&console);
        let id = device.id.clone();
        let open_id = device.id.clone();
        rsx! {
            tr { key: "{device.id}", id: "row-{device.id}", class: if is_selected { "selected" },
                td {
                    input {
                        r#type: "checkbox",
                        id: "select-{device.id}",
                        "aria-label": "Select {device.name}",
                        checked: is_selected,
                        onchange: move |_| {
                            toggle.toggle_selected(&id);
                            tick.bump();
                        },
                    }
                }
                td { "{device.name}" }
                td { span { class: "status {status}", id: "status-{device.id}", "{status}" } }
                td { "{device.city}" }
                td {
                    button {
                        class: "link",
                        "aria-label": "Details of {device.name}",
                        onclick: move |_| {
                            open.open_drawer(&open_id);
                            tick.bump();
                        },
                        "Details"
                    }
                }
            }
        }
    });
    let sort_name = Arc::clone(&console);
    let sort_status = Arc::clone(&console);
    let sort_city = Arc::clone(&console);
    rsx! {
        section { class: "table", "aria-label": "Devices",
            p { class: "selection-line",
                span { id: "selection", "{summary}" }
                if let Some(who) = marks.selection {
                    " "
                    span { id: "selection-mark", class: "mark", "Selected by {who}" }
                }
                if let Some(who) = marks.sorting {
                    " "
                    span { id: "sorting-mark", class: "mark", "Sorted by {who}" }
                }
            }
            div { class: "table-scroll",
            table {
                caption { class: "visually-hidden", "Devices matching the filters" }
                thead {
                    tr {
                        th { scope: "col", span { class: "visually-hidden", "Selected" } }
                        th { scope: "col", "aria-sort": aria_sort(SortKey::Name), button { id: "sort-name", class: "link", onclick: move |_| { sort_name.sort_by(SortKey::Name); tick.bump(); }, "Name{arrow(SortKey::Name)}" } }
                        th { scope: "col", "aria-sort": aria_sort(SortKey::Status), button { id: "sort-status", class: "link", onclick: move |_| { sort_status.sort_by(SortKey::Status); tick.bump(); }, "Status{arrow(SortKey::Status)}" } }
                        th { scope: "col", "aria-sort": aria_sort(SortKey::City), button { id: "sort-city", class: "link", onclick: move |_| { sort_city.sort_by(SortKey::City); tick.bump(); }, "City{arrow(SortKey::City)}" } }
                        th { scope: "col", span { class: "visually-hidden", "Details" } }
                    }
                }
                tbody { {rows} }
            }
            }
        }
    }
}

#[component]
fn DrawerView() -> Element {
    let console = use_console();
    let tick = use_refresh();
    let face = Arc::clone(&console);
    let _drawer = use_agent_component(move || Arc::new(Drawer(face)));
    let Some(device) = console.drawer_device() else {
        return rsx! {};
    };
    let close = Arc::clone(&console);
    let status = device.status.as_str();
    rsx! {
        aside { id: "drawer", class: "drawer",
            h2 { "{device.name}" }
            dl {
                dt { "Id" } dd { "{device.id}" }
                dt { "Status" } dd { "{status}" }
                dt { "City" } dd { "{device.city}" }
            }
            button {
                onclick: move |_| {
                    close.close_drawer();
                    tick.bump();
                },
                "Close"
            }
        }
    }
}
