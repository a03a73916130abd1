//! The agent panel: how an MCP client connects to this console, and a
//! control that runs the scripted agent against the page's own surface so a
//! person watches it act and answers its confirmation in the dialog.

use std::io::Write;

use dioxus::prelude::*;

use super::Shared;
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

#[component]
pub(crate) fn AgentPanel() -> Element {
    let shared = use_context::<Shared>();
    let mut transcript = use_signal(String::new);
    let mut running = use_signal(|| false);
    let config = format!(
        "{{\n  \"mcpServers\": {{\n    \"devices\": {{ \"url\": \"{}\" }}\n  }}\n}}",
        shared.mcp_url
    );
    let app = shared.app.clone();
    rsx! {
        aside { class: "agent",
            h2 { "Agents" }
            p {
                "MCP clients connect to "
                code { id: "mcp-url", "{shared.mcp_url}" }
                " (streamable HTTP). Their tool list follows this page: tick rows and "
                code { "domain_devices__disable" }
                " appears; open Settings and the devices tools go. A desktop client's configuration:"
            }
            pre { class: "config", "{config}" }
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
                        let _ = writeln!(log, "\nDone: {} devices disabled.", outcome.disabled);
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
