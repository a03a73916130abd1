//! The WebMCP adapter: a page serves its live surface to the agent in the
//! browser through `document.modelContext`, instead of that agent reading
//! and clicking the page.
//!
//! Browsers that carry WebMCP (Chromium with `--enable-features=WebMCP`)
//! give a page `document.modelContext` with `registerTool(tool, {signal})`,
//! `getTools()`, `executeTool(tool, args)` and `toolchange` /
//! `toolactivated` / `toolcancel` events. The browser does not check
//! arguments against a tool's `inputSchema`: this adapter runs every call
//! through the registry's pipeline, which does.
//!
//! A [`PageAgent`] is the in-page agent of one page: its own consumer
//! (kind [`ConsumerKind::WebMcp`]: distinct from MCP sessions and from the
//! person), its tools, and its calls. The page side is [`GLUE`], a script
//! that speaks to the `PageAgent` over any message channel the page already
//! has with its server (a LiveView websocket, a wasm binding's direct
//! calls), as JSON [messages](PageAgent::receive):
//!
//! - **Tools** follow the surface: the page registers one tool per
//!   capability the in-page agent may use right now (wire names,
//!   descriptions and input schemas from the toolset, read-only hints from
//!   effects), and unregisters and re-registers them as the surface changes
//!   (availability, navigation, another tab taking over). A hidden or
//!   unavailable capability is never listed.
//! - **Calls** run through the full pipeline as the in-page agent:
//!   validation, policies, confirmation, staleness, audit. A capability
//!   error comes back as an MCP-shaped `isError` result carrying the exact
//!   payload (`code`, `message`, `retry`, `details`), never as a thrown
//!   error (which the browser would reduce to "the invocation failed").
//! - **Confirmations** the in-page agent's calls need are answered by the
//!   person in the page's own dialog: the call is held open until they
//!   answer, then retried with the evidence. The in-page agent has no way
//!   to approve: its calls carry no evidence, and nothing it sends names a
//!   confirmation.
//! - **Cancellation**: the page's `toolcancel` (or its own abort) cancels
//!   the invocation; a call waiting for the person withdraws its request.
//!   When the page stops serving while it stays open, the
//!   [end message](PageAgent::end_message) unregisters its tools and
//!   settles its calls still in flight `CANCELLED`.
//! - **Where there is no `document.modelContext`**, the glue does nothing
//!   and says so once ([`PageMessage::Absent`]); the page works as before.
//!
//! **Where the registry runs.** In a LiveView app (the devices console)
//! the registry runs on the server and the page relays over its own
//! authenticated websocket: the server keeps the surface, the person's
//! dialog and the audit in one place, and the page holds nothing an agent
//! could tamper with. A registry also runs inside a page
//! (`wasm32-unknown-unknown`): its timeouts, expiry, dedupe windows and
//! rate limits use the page's clock and timers there (see
//! [`adapter::time`](crate::adapter::time)), tested in headless Chromium
//! by `wasm-bindgen-test` (`runtime/wasm-tests`, in CI). Its [`PageAgent`]
//! then serves the in-page agent from the page itself: with
//! `agent_surface_dioxus::use_webmcp` in a Dioxus web app (the example
//! `examples/devices-web`, tested by WebDriver in Chromium with WebMCP), or
//! with `serve_in_page` (wasm32 only) in any other. Approvals there are the
//! page's: a verifier of the person's proof that runs in the page answers
//! to the page's own scripts, so an application whose approvals must be
//! proven keeps its registry on the server.
//!
//! Bounds: at most [`MAX_CALLS_IN_FLIGHT`] calls of one page agent run at
//! once (more settle `RATE_LIMITED` at once); names and call ids are
//! bounded by the registry's `max_id_bytes`, arguments by its input limits.

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod in_page;
mod messages;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::adapter::{
    CallActivity, ChangeWatcher, ConsumerView, ConsumerViews, Mark, ToolCall, Topology, served,
};
use crate::adapter::{bounds, refused};
use crate::context::{Consumer, ConsumerKind};
use crate::error::{ErrorPayload, RateLimitReason};
use crate::registry::Registry;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use in_page::{InPage, serve_in_page};
pub use messages::{PageMessage, call_result, tool_entry};

/// The page's side of the adapter: a script defining one function,
/// `agentSurfaceWebMcp(channel)`, where `channel` has `send(message)` (to
/// the server's [`PageAgent::receive`]) and `listen(handler)` (the
/// server's messages: [`PageAgent::tools_message`], call results and
/// [`PageAgent::end_message`], to `handler`). Where the browser has no `document.modelContext` it sends
/// `{"type": "absent"}` and does nothing else.
pub const GLUE: &str = include_str!("glue.js");

/// A call the page agent runs: the result message to send back.
pub type Pending = Pin<Box<dyn Future<Output = Value> + Send + 'static>>;

/// Most calls of one page agent in flight at once.
pub const MAX_CALLS_IN_FLIGHT: usize = 16;

/// The in-page agent of one page. Cheap to clone; dropping the last clone
/// ends its session: its view, settled dedupe records and open
/// confirmations go with it.
#[derive(Clone, Debug)]
pub struct PageAgent {
    session: Arc<Session>,
}

/// One page agent's session: its view, its calls in flight.
#[derive(Debug)]
struct Session {
    registry: Registry,
    views: ConsumerViews,
    view: Arc<ConsumerView>,
    activity: CallActivity,
    agent_id: String,
    /// Calls in flight by the page's call number.
    calls: Mutex<BTreeMap<u64, CancellationToken>>,
}

impl Drop for Session {
    fn drop(&mut self) {
        for (_, call) in
            std::mem::take(&mut *self.calls.lock().unwrap_or_else(PoisonError::into_inner))
        {
            call.cancel();
        }
        self.views.end_session(&self.agent_id);
    }
}

impl PageAgent {
    /// The in-page agent `agent_id` of a page of `registry` (unique per
    /// page: a tab's number, a page load's id), named `label` where a
    /// person reads who asked ("In-page agent"). `None` once the registry
    /// is disposed.
    ///
    /// ```
    /// let registry = agent_surface::Registry::default();
    /// let agent = agent_surface::webmcp::PageAgent::new(&registry, "tab-1", "In-page agent").unwrap();
    /// assert_eq!(agent.consumer().key().as_ref(), "webmcp:tab-1");
    /// assert_eq!(agent.tools_message()["tools"], serde_json::json!([]));
    /// ```
    pub fn new(registry: &Registry, agent_id: &str, label: &str) -> Option<PageAgent> {
        // Embedded: a call that needs the person's approval waits for it
        // (in the page's own dialog) and is retried with the evidence.
        let views = ConsumerViews::new(registry, ConsumerKind::WebMcp, Topology::Embedded);
        let view = views.get(agent_id, Some(label))?;
        Some(PageAgent {
            session: Arc::new(Session {
                registry: registry.clone(),
                views,
                view,
                activity: CallActivity::default(),
                agent_id: agent_id.to_owned(),
                calls: Mutex::new(BTreeMap::new()),
            }),
        })
    }

    /// The consumer its calls are made as.
    pub fn consumer(&self) -> &Consumer {
        self.session.view.toolset().consumer()
    }

    /// Now, as a moment a [`watch`](Self::watch) covers from: take it
    /// *before* sending a tool list.
    pub fn mark(&self) -> Mark {
        Mark::now(&self.session.registry, &self.session.activity)
    }

    /// The message that ends the page's serving (`{"type": "end",
    /// "result": ...}`), to send when the page stops serving while it is
    /// still open (the component serving it went): the glue unregisters
    /// every tool and settles each call still waiting for the server with
    /// `result`, a `CANCELLED` result (the server's calls end with the
    /// serving, their requests to the person withdrawn), so no call of the
    /// in-page agent is left waiting for an answer that will never come.
    pub fn end_message(&self) -> Value {
        let cancelled = refused(&self.session.registry, "", None, ErrorPayload::cancelled());
        serde_json::json!({ "type": "end", "result": call_result(&cancelled) })
    }

    /// The tools message for the page: the tools the in-page agent may
    /// use right now (`{"type": "tools", "tools": [...]}`).
    pub fn tools_message(&self) -> Value {
        let tools = self.session.view.current();
        let entries: Vec<Value> = served(&tools).map(tool_entry).collect();
        serde_json::json!({
            "type": "tools",
            "tools": entries,
            // Arguments over twice this the page does not send (see
            // `PageMessage::TooLarge`): the pipeline refuses them anyway.
            "maxArgumentBytes": self.session.registry.limits().max_input_bytes.saturating_mul(2),
            // Arguments nesting deeper than this the page does not send
            // either (`PageMessage::TooDeep`): one level over what the
            // pipeline takes, so it still says exactly what is too deep,
            // and never deeper than the page's message (one level more)
            // can be parsed as JSON text.
            "maxArgumentDepth": self
                .session
                .registry
                .limits()
                .max_input_depth
                .saturating_add(1)
                .min(bounds::PARSE_DEPTH - 2),
        })
    }

    /// Follows what the in-page agent may use, covering every change after
    /// `since`: send [`tools_message`](Self::tools_message) again each time
    /// [`ChangeWatcher::changed`] returns (and at once when `due`).
    pub fn watch(&self, since: Mark) -> (ChangeWatcher, bool) {
        ChangeWatcher::attach(
            &self.session.registry,
            &self.session.activity,
            Arc::clone(&self.session.view),
            since,
        )
    }

    /// Takes one message from the page. A call comes back as a future of
    /// the result message to send back (run it concurrently with other
    /// calls: a call may wait for the person); a cancellation, the page's
    /// hello and anything unreadable come back as `None` (a cancellation
    /// has taken effect).
    pub fn receive(&self, message: &Value) -> Option<Pending> {
        match PageMessage::parse(message, self.session.registry.limits().max_id_bytes)? {
            PageMessage::Call {
                call,
                name,
                arguments,
            } => Some(Box::pin(self.call(call, name, arguments)) as Pending),
            PageMessage::TooLarge { call, name } => {
                let max = self.session.registry.limits().max_input_bytes;
                Some(self.refuse(call, &name, bounds::too_large("", max)))
            }
            PageMessage::TooDeep { call, name } => {
                let max = self.session.registry.limits().max_input_depth;
                Some(self.refuse(call, &name, bounds::too_deep("", max)))
            }
            PageMessage::Cancel { call } => {
                if let Some(token) = self
                    .session
                    .calls
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&call)
                {
                    token.cancel();
                }
                None
            }
            PageMessage::Ready | PageMessage::Absent => None,
        }
    }

    /// Call number `call` of tool `name`, refused before the pipeline for
    /// `issue` (as the pipeline would refuse it).
    fn refuse(&self, call: u64, name: &str, issue: crate::schema::Issue) -> Pending {
        let refusal = refused(
            &self.session.registry,
            name,
            None,
            ErrorPayload::invalid_input(&[issue]),
        );
        Box::pin(std::future::ready(messages::result_message(call, &refusal)))
    }

    /// Runs call number `call` of tool `name`.
    fn call(
        &self,
        call: u64,
        name: String,
        arguments: Value,
    ) -> impl Future<Output = Value> + Send + 'static {
        let session = Arc::clone(&self.session);
        let cancel = CancellationToken::new();
        let admitted = {
            let mut calls = session.calls.lock().unwrap_or_else(PoisonError::into_inner);
            let room = calls.len() < MAX_CALLS_IN_FLIGHT && !calls.contains_key(&call);
            if room {
                calls.insert(call, cancel.clone());
            }
            room
        };
        // Forgotten when the call ends, or when its future is dropped —
        // even before its first poll: the guard exists before the future.
        let slot = admitted.then(|| Slot {
            session: Arc::clone(&session),
            call,
        });
        async move {
            let _slot = slot;
            let max_id = session.registry.limits().max_id_bytes;
            let name = bounds::truncated(&name, max_id).to_owned();
            if !admitted {
                let refusal = refused(
                    &session.registry,
                    &name,
                    None,
                    ErrorPayload::rate_limited(RateLimitReason::QueueFull, None),
                );
                return messages::result_message(call, &refusal);
            }
            let result = {
                // Until this call ends: then the agent's tools are checked
                // again (a call may change what is available).
                let _busy = session.activity.begin(Arc::clone(&session.view), false);
                let toolset = session.view.toolset();
                let call = ToolCall::new(name.clone(), arguments);
                if toolset.has_tool(&name) {
                    call.run(toolset, None, cancel).await
                } else {
                    match call.run_stale(toolset, None, cancel).await {
                        Some(result) => result,
                        None => refused(&session.registry, &name, None, ErrorPayload::not_found()),
                    }
                }
            };
            messages::result_message(call, &result)
        }
    }
}

/// A call's place among the calls in flight, given up when it ends.
struct Slot {
    session: Arc<Session>,
    call: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.session
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.call);
    }
}
