//! The app: one registry for the page, the navigation, the devices page
//! (filter bar and table, each mounting its capabilities while it is
//! rendered), the about page, and the approval dialog. Served to the
//! browser's agent through WebMCP while the app is on screen.

use std::sync::Arc;

use agent_surface::Registry;
use agent_surface_dioxus::{
    WebMcpState, use_agent_component, use_agent_mount, use_agent_surface_provider,
    use_pending_confirmations, use_surface_revision, use_webmcp,
};
use dioxus::prelude::*;

use crate::backend::{PageBackend, disable_reference, present};
use crate::dialog::ApprovalDialog;
use crate::fleet::{CityFilter, Filters, Fleet, Page, StatusFilter};
use crate::surface::{FilterBar, Navigation, Table};

/// The page's approval channel: the dialog the person answers in.
pub const PAGE_CHANNEL: &str = "page-dialog";

/// The person's label, as the audit records who approved.
pub const PERSON: &str = "person";

/// The page's registry for `fleet`: its backend runs the domain
/// operations, and the agent's requests to act wait for the person's answer
/// in the page's dialog ([`PAGE_CHANNEL`]).
pub fn registry(fleet: &Arc<Fleet>) -> Registry {
    let shown = Arc::clone(fleet);
    let registry = Registry::builder()
        .approval_channel(PAGE_CHANNEL)
        .confirmation_presenter(move |request| present(request, &shown))
        .build();
    // The backend is built from the same contract: nothing can disagree.
    let _ = registry.set_procedure_executor(Some(Arc::new(PageBackend::new(Arc::clone(fleet)))));
    registry
}

/// What every part of the page shares: the fleet, and a counter the person's
/// changes bump so the page renders them (the agent's changes re-render
/// through [`use_surface_revision`]).
#[derive(Clone)]
struct Shared {
    fleet: Arc<Fleet>,
    changed: Signal<u64>,
}

impl Shared {
    fn changed(&self) {
        let mut changed = self.changed;
        changed += 1;
    }
}

fn use_shared() -> Shared {
    use_context::<Shared>()
}

/// The app's root component.
pub fn app() -> Element {
    let shared = use_context_provider(|| Shared {
        fleet: Arc::new(Fleet::default()),
        changed: Signal::new(0),
    });
    use_agent_surface_provider(|| registry(&shared.fleet));
    let fleet = Arc::clone(&shared.fleet);
    use_agent_component(move || Arc::new(Navigation(fleet)));
    let webmcp = use_webmcp(|| "page".to_owned(), "In-page agent");
    let _ = use_surface_revision()();
    let _ = (shared.changed)();
    // While the dialog asks, the page behind it takes no focus or clicks.
    let pending = use_pending_confirmations();
    let asking = pending.presented().is_some();
    let page = shared.fleet.page();
    let nav = |to: Page| {
        let shared = shared.clone();
        move |_| {
            shared.fleet.go_to(to);
            shared.changed();
        }
    };
    let agent = match webmcp() {
        WebMcpState::Starting => "Connecting to the browser's agent…",
        WebMcpState::Serving => "The browser's agent can use this page (WebMCP)",
        WebMcpState::Absent => "This browser has no WebMCP: no agent can reach this page",
        _ => "The agent's connection ended",
    };
    rsx! {
        header { inert: asking.then_some("true"),
            h1 { "Device fleet" }
            nav { "aria-label": "Pages",
                for to in [Page::Devices, Page::About] {
                    button {
                        class: "nav",
                        id: "nav-{to.title().to_lowercase()}",
                        "aria-current": if page == to { "page" } else { "false" },
                        onclick: nav(to),
                        "{to.title()}"
                    }
                }
            }
            p { id: "webmcp", class: "agent-state", "{agent}" }
        }
        main { inert: asking.then_some("true"),
            match page {
                Page::Devices => rsx! { DevicesPage {} },
                Page::About => rsx! { AboutPage {} },
            }
        }
        ApprovalDialog { pending }
    }
}

/// The devices page: the filter bar above the table.
#[component]
fn DevicesPage() -> Element {
    rsx! {
        FilterBarView {}
        TableView {}
    }
}

/// The filter bar: statuses and cities.
#[component]
fn FilterBarView() -> Element {
    let shared = use_shared();
    let fleet = Arc::clone(&shared.fleet);
    use_agent_component(move || Arc::new(FilterBar(fleet)));
    let _ = use_surface_revision()();
    let _ = (shared.changed)();
    let filters = shared.fleet.filters();
    let set = move |filters: Filters| {
        shared.fleet.set_filters(filters);
        shared.changed();
    };
    let set_city = set.clone();
    let statuses = [
        (StatusFilter::All, "all"),
        (StatusFilter::Online, "online"),
        (StatusFilter::Offline, "offline"),
    ];
    let cities = [
        (CityFilter::All, "all"),
        (CityFilter::Milan, "Milan"),
        (CityFilter::Rome, "Rome"),
        (CityFilter::Turin, "Turin"),
    ];
    rsx! {
        form { class: "filters", onsubmit: move |event| event.prevent_default(),
            label { "Status "
                select {
                    id: "status-filter",
                    onchange: move |event| {
                        let status = statuses
                            .iter()
                            .find(|(_, name)| *name == event.value())
                            .map_or(StatusFilter::All, |(status, _)| *status);
                        set(Filters { status, ..filters });
                    },
                    for (status, name) in statuses {
                        option { value: name, selected: filters.status == status, "{name}" }
                    }
                }
            }
            label { "City "
                select {
                    id: "city-filter",
                    onchange: move |event| {
                        let city = cities
                            .iter()
                            .find(|(_, name)| *name == event.value())
                            .map_or(CityFilter::All, |(city, _)| *city);
                        set_city(Filters { city, ..filters });
                    },
                    for (city, name) in cities {
                        option { value: name, selected: filters.city == city, "{name}" }
                    }
                }
            }
        }
    }
}

/// The device table, with a tick box per row.
#[component]
fn TableView() -> Element {
    let shared = use_shared();
    let fleet = Arc::clone(&shared.fleet);
    use_agent_mount((), move |registry| {
        registry
            .mounting(Arc::new(Table(Arc::clone(&fleet))))
            .procedure(disable_reference(&fleet))
            .mount()
    });
    let _ = use_surface_revision()();
    let _ = (shared.changed)();
    let rows = shared.fleet.visible();
    let selected = shared.fleet.selected().len();
    rsx! {
        p { id: "selection", "{selected} selected" }
        table {
            thead {
                tr {
                    th { "" }
                    th { "Device" }
                    th { "City" }
                    th { "Status" }
                }
            }
            tbody {
                for device in rows {
                    tr { key: "{device.id}", id: "row-{device.id}",
                        td {
                            input {
                                r#type: "checkbox",
                                id: "tick-{device.id}",
                                "aria-label": "Select {device.name}",
                                checked: shared.fleet.is_selected(&device.id),
                                onchange: {
                                    let shared = shared.clone();
                                    let id = device.id.clone();
                                    move |event: FormEvent| {
                                        shared.fleet.tick(&id, event.checked());
                                        shared.changed();
                                    }
                                },
                            }
                        }
                        td { "{device.name}" }
                        td { "{device.city.name()}" }
                        td { class: "status {device.status.name()}", "{device.status.name()}" }
                    }
                }
            }
        }
    }
}

/// The about page: no tools of the devices page while it is shown.
#[component]
fn AboutPage() -> Element {
    rsx! {
        section { id: "about",
            h2 { "About" }
            p {
                "This app runs entirely in the page: its registry, the pipeline every agent call \
                 goes through, and the devices. The browser's agent sees the tools of what is on \
                 screen; disabling devices waits for your answer here."
            }
        }
    }
}
