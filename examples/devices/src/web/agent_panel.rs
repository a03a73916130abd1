//! The Agents panel, live: the agents connected now and what each may do
//! this moment, the requests waiting for the person, what agents did, how
//! an MCP client connects, and a control that runs the scripted agent
//! against the page's own surface so a person watches it act and answers
//! its confirmation in the dialog.

use std::io::Write;

use agent_surface_dioxus::use_pending_confirmations;
use dioxus::prelude::*;

use super::Shared;
use super::activity::ActivityList;
use super::clock::use_now_ms;
use crate::scenario::{self, Approval};

/// A transcript written into a signal (the agent runs as a task of this
/// tab, on the tab's thread).
struct SignalLog(Signal<String>);

impl Write for SignalLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write().push_str(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A tool's wire name as a person reads it: `view_devices__table__selectRows`
/// → `table: select rows`.
fn tool_words(name: &str) -> String {
    if name == "domain_devices__disable" {
        return "disable devices".to_owned();
    }
    let parts: Vec<&str> = name.split("__").collect();
    let last = parts.last().copied().unwrap_or(name);
    let mut words = String::new();
    for c in last.chars() {
        if c.is_uppercase() {
            words.push(' ');
            words.extend(c.to_lowercase());
        } else {
            words.push(c);
        }
    }
    match parts.len() {
        0 | 1 => words,
        n => format!("{}: {words}", parts.get(n - 2).copied().unwrap_or_default()),
    }
}

/// A capability id as a person reads it: `view:devices.table.selectRows`
/// → `table: select rows`.
fn capability_words(id: &str) -> String {
    if id == "domain:devices.disable" {
        return "disable devices".to_owned();
    }
    tool_words(&id.replace([':', '.'], "__"))
}

/// What the in-page agent may use right now: the page's available
/// capabilities and procedures, as the in-page agent's own view has them.
fn in_page_tools(shared: &Shared) -> Vec<String> {
    let mut options = agent_surface::snapshot::SnapshotOptions::for_consumer(
        agent_surface::context::Consumer::new(
            agent_surface::context::ConsumerKind::WebMcp,
            "panel",
        ),
    );
    options.include_unavailable = false;
    let snapshot = shared.app.registry().snapshot(&options);
    let views = snapshot
        .capabilities()
        .filter(|(_, capability)| capability.available())
        .map(|(_, capability)| capability_words(capability.id()));
    let procedures = snapshot
        .procedures()
        .iter()
        .filter(|procedure| procedure.available())
        .map(|procedure| {
            let id = procedure.procedure_id();
            match id.strip_prefix("domain:") {
                Some(_) => capability_words(id),
                None => capability_words(&format!("domain:{id}")),
            }
        });
    views.chain(procedures).collect()
}

/// `in_page`: this browser has WebMCP and the page serves its tools to the
/// agent built into it.
#[component]
pub(crate) fn AgentPanel(in_page: bool) -> Element {
    let shared = use_context::<Shared>();
    let pending = use_pending_confirmations();
    let now = use_now_ms()();
    let mut transcript = use_signal(String::new);
    let mut running = use_signal(|| false);
    // What the in-page agent may use follows the surface: read it again
    // whenever the surface moves.
    let _ = (use_context::<super::watch::Revision>().0)();
    let in_page_list = if in_page {
        in_page_tools(&shared).join(", ")
    } else {
        String::new()
    };
    let clients = shared.mcp.clients();
    let waiting = pending.list();
    let app = shared.app.clone();
    rsx! {
        aside { class: "agent", "aria-labelledby": "agents-title",
            h2 { id: "agents-title", "Agents" }
            section { "aria-labelledby": "connected-title",
                h3 { id: "connected-title", "Connected now" }
                ul { id: "agents",
                    if in_page {
                        li { class: "agent-row", "data-agent": "in-page",
                            strong { "In-page agent" }
                            " — the agent built into this browser, using this page's tools"
                            if !in_page_list.is_empty() {
                                p { id: "in-page-tools", class: "tools muted", "{in_page_list}" }
                            }
                        }
                    }
                    if running() {
                        li { class: "agent-row", "data-agent": "scripted",
                            strong { "Scripted agent" }
                            " — working in this page"
                        }
                    }
                    for client in clients.iter() {
                        {
                            let name = client
                                .consumer
                                .label()
                                .unwrap_or(client.consumer.key())
                                .to_owned();
                            let can: Vec<String> = client.tools.iter().map(|t| tool_words(t)).collect();
                            let key = client.consumer.key().to_string();
                            let summary = if can.is_empty() {
                                "can use nothing right now".to_owned()
                            } else {
                                format!("can use {} tools now", can.len())
                            };
                            let list = can.join(", ");
                            let idle_s = now.saturating_sub(client.last_active_ms) / 1000;
                            let active = match idle_s {
                                0..=59 => "active just now".to_owned(),
                                _ => format!("last active {} min ago (it may have left)", idle_s / 60),
                            };
                            rsx! {
                                li { key: "{key}", class: "agent-row", "data-agent": "{key}",
                                    strong { "{name}" }
                                    " — {summary}, {active}"
                                    if !list.is_empty() {
                                        p { class: "tools muted", "{list}" }
                                    }
                                }
                            }
                        }
                    }
                }
                if clients.is_empty() && !running() && !in_page {
                    p { class: "muted", "No agent is connected." }
                }
            }
            section { "aria-labelledby": "waiting-title",
                h3 { id: "waiting-title", "Waiting for you" }
                if waiting.is_empty() {
                    p { id: "waiting", class: "muted", "No request is waiting." }
                } else {
                    ul { id: "waiting",
                        for request in waiting.iter() {
                            li { key: "{request.confirmation_id}", "{request.presentation.title}" }
                        }
                    }
                }
            }
            ActivityList {}
            section { "aria-labelledby": "connect-title",
                h3 { id: "connect-title", "Connect an agent" }
                p {
                    "An agent's program (an MCP client) connects to "
                    code { id: "mcp-url", "{shared.mcp_url}" }
                    ". What it may use follows this page: tick devices and it may ask to disable them; open Settings and the device tools leave. Each request still waits for your approval here."
                }
            }
            button {
                id: "run-agent",
                class: "primary",
                disabled: running(),
                onclick: move |_| {
                    running.set(true);
                    transcript.set(String::new());
                    let app = app.clone();
                    spawn(async move {
                        let mut log = SignalLog(transcript);
                        let outcome = scenario::run_with(&app, &mut log, Approval::Person).await;
                        let _ = match outcome.disabled {
                            0 => writeln!(log, "\nDone: nothing was disabled."),
                            1 => writeln!(log, "\nDone: 1 device disabled."),
                            n => writeln!(log, "\nDone: {n} devices disabled."),
                        };
                        running.set(false);
                    });
                },
                if running() { "The agent is working…" } else { "Run the scripted agent" }
            }
            p { class: "hint",
                "It shows the offline devices in Milan, selects them and asks to disable them: answer in the dialog."
            }
            if !transcript.read().is_empty() {
                pre { id: "transcript", "{transcript}" }
            }
        }
    }
}
