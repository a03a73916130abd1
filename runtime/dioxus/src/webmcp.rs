//! `use_webmcp`: the page serves its surface to the agent in the browser
//! through WebMCP (`document.modelContext`), for as long as the calling
//! component is rendered.
//!
//! The page registers one tool per capability the in-page agent may use
//! right now, and re-registers them as the surface changes (availability,
//! navigation, another tab taking over). Each call the in-page agent makes
//! runs on the server's registry, through the full pipeline, as the page's
//! own consumer ([`PageAgent`]): validation, policies, confirmation,
//! staleness and audit. A call that needs the person's approval is held
//! open until they answer in the page's own dialog; the in-page agent has
//! no way to answer it.
//!
//! The page and the server talk over the channel the page already has:
//! Dioxus's `eval` (in LiveView, the page's own authenticated websocket).
//! Where the browser has no `document.modelContext` nothing is registered
//! and the page works exactly as before ([`WebMcpState::Absent`]).

use agent_surface::webmcp::{GLUE, PageAgent, Pending};
use dioxus_core::{spawn, use_hook};
use dioxus_document::{Eval, eval};
use dioxus_signals::{ReadSignal, Signal, WritableExt};
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;

use crate::provider::use_registry;

/// Where the page's tools stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WebMcpState {
    /// Waiting for the page to say whether the browser has WebMCP.
    Starting,
    /// The page serves the in-page agent its tools.
    Serving,
    /// The browser has no `document.modelContext`: nothing is served.
    Absent,
    /// The registry is gone or the page stopped answering.
    Ended,
}

/// How the glue hears the server: in LiveView, the server's messages are
/// pushed onto this eval's queue, and are taken as they come (Dioxus's
/// `dioxus.recv()` would poll); elsewhere, `dioxus.recv()`.
const LISTEN: &str = r#"
agentSurfaceWebMcp({
  send: function (message) { dioxus.send(message); },
  listen: function (handler) {
    if (typeof _message_queue !== "undefined" && Array.isArray(_message_queue)) {
      var queue = _message_queue;
      var take = function () {
        while (queue.length > 0) { handler(queue.shift()); }
      };
      queue.push = function () {
        Array.prototype.push.apply(queue, arguments);
        take();
        return queue.length;
      };
      take();
    } else {
      (async function () {
        for (;;) { handler(await dioxus.recv()); }
      })();
    }
  }
});
"#;

/// Serves the surface of the provided registry (see
/// [`use_agent_surface_provider`](crate::use_agent_surface_provider)) to
/// the agent in this page's browser while the calling component is
/// rendered. `agent_id` (called once) names this page's in-page agent,
/// unique per page (a tab's number); `label` is how a person reads who
/// asked ("In-page agent"). Returns where it stands.
///
/// Render it in the component that is on screen while the page drives the
/// surface (in a console with several tabs, the tab in front): when the
/// component goes, the page's tools are unregistered, the in-page agent's
/// calls are cancelled and its requests for approval withdrawn.
pub fn use_webmcp(agent_id: impl FnOnce() -> String, label: &str) -> ReadSignal<WebMcpState> {
    let registry = use_registry();
    use_hook(|| {
        let state = Signal::new(WebMcpState::Starting);
        let agent = registry
            .as_ref()
            .and_then(|registry| PageAgent::new(registry, &agent_id(), label));
        match agent {
            Some(agent) => {
                spawn(serve(agent, state));
            }
            None => {
                let mut state = state;
                state.set(WebMcpState::Ended);
            }
        }
        state.into()
    })
}

/// Takes the page's tools back if the component goes while they are
/// registered, and settles the in-page agent's calls still in flight (they
/// end with the serving task) `CANCELLED`: the page would otherwise wait
/// for their results for ever.
struct Unregister(Eval, Value);

impl Drop for Unregister {
    fn drop(&mut self) {
        let _ = self.0.send(self.1.take());
    }
}

async fn serve(agent: PageAgent, mut state: Signal<WebMcpState>) {
    let mut page = eval(&format!("{GLUE}\n{LISTEN}"));
    // The first message says whether the browser has WebMCP.
    match page.recv::<Value>().await {
        Ok(hello) if hello.get("type").and_then(Value::as_str) == Some("ready") => {}
        Ok(_) => {
            state.set(WebMcpState::Absent);
            return;
        }
        Err(_) => {
            state.set(WebMcpState::Ended);
            return;
        }
    }
    state.set(WebMcpState::Serving);
    let _unregister = Unregister(page, agent.end_message());
    let since = agent.mark();
    let (mut watcher, due) = agent.watch(since);
    if page.send(agent.tools_message()).is_err() {
        state.set(WebMcpState::Ended);
        return;
    }
    if due && page.send(agent.tools_message()).is_err() {
        state.set(WebMcpState::Ended);
        return;
    }
    // The in-page agent's calls run here, side by side (a call may wait
    // for the person): dropped with this task, each settles CANCELLED.
    let mut calls: FuturesUnordered<Pending> = FuturesUnordered::new();
    loop {
        tokio::select! {
            message = page.recv::<Value>() => {
                let Ok(message) = message else { break };
                if let Some(call) = agent.receive(&message) {
                    calls.push(call);
                }
            }
            Some(result) = calls.next(), if !calls.is_empty() => {
                if page.send(result).is_err() {
                    break;
                }
            }
            moved = watcher.changed() => {
                if moved.is_none() || page.send(agent.tools_message()).is_err() {
                    break;
                }
            }
        }
    }
    state.set(WebMcpState::Ended);
}
