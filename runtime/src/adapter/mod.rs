//! The adapter kit: everything a transport adapter needs to serve a
//! registry to agents, in one room. The in-process toolset
//! ([`crate::toolset`]), MCP (`mcp`, feature `mcp-server`) and WebMCP
//! ([`crate::webmcp`]) are built on it and on the registry's public API
//! alone (`tests/layers.rs` checks it), so an adapter outside this crate
//! can do what they do.
//!
//! | what an adapter does | with |
//! |---|---|
//! | serve each consumer its tools | [`ConsumerViews`], [`ConsumerView`]: one [`Toolset`] per consumer (session, principal, page), shared builds, the end of a session |
//! | project the surface as tools | [`Toolset`] ([`ToolsetBuilder`], [`Tool`], [`ToolState`], [`wire_name`]): direct or meta mode, the name → target map |
//! | tell a client its tools changed | [`ChangeWatcher`], [`Mark`], [`CallActivity`], [`served`], [`same_served`] |
//! | run a call | [`ToolCall`]: through the pipeline under the consumer's reach, a stale name decoded and explained |
//! | the confirmation round trip | remote topology: `CONFIRMATION_REQUIRED` handed to the agent, whose retry carries the evidence; wait topology: the toolset's wait mode holds the call while the person answers in the application (the in-process loop, WebMCP's page agent), [`ask_the_person`] while a client asks its own person too ([`approval_prompt`], [`answer_on_connection`]); both retry it with the evidence, on one wait that decides how every wait ends |
//! | refuse before the pipeline | [`bounds`] (identifier lengths, input depth, with the pipeline's issue texts), [`refused`] |
//! | stay bounded and contained | [`Lru`] (a count and a time to live: a table an agent can grow), [`contain`] (host callbacks that panic), [`text`] (agent text shown to a person), [`time`] (waits that work in a browser page too) |
//!
//! # Writing an adapter
//!
//! An adapter translates a transport to registry calls and back; it adds
//! no rules of its own. For a new transport — here, one JSON request per
//! line from each client — it:
//!
//! 1. keeps one [`ConsumerViews`] for the server, with the consumer kind
//!    and [`Topology`] of the transport (`Remote`: the agent retries after
//!    a confirmation; `Embedded`: the adapter waits for the person);
//! 2. takes each client's [`ConsumerView`] by a stable id (a session id, a
//!    principal) and lists [`ConsumerView::current`] as its tools,
//!    [`served`] filtering what is not callable;
//! 3. runs each call as a [`ToolCall`] on the view's toolset (the
//!    transport's request id becomes the invocation id, so a retry joins
//!    or replays instead of running twice), and sends the
//!    [`InvocationResult`](crate::invoke::InvocationResult) back as it is:
//!    its error carries the code, retry hint and details the agent needs;
//! 4. refuses what it cannot parse with [`refused`] and [`bounds`];
//! 5. follows changes with a [`ChangeWatcher`] (`tools/list_changed`);
//! 6. ends the client's session with [`ConsumerViews::end_session`]: its
//!    view, its settled dedupe records and its open confirmations go.
//!
//! ```
//! use agent_surface::adapter::{ConsumerViews, ToolCall, Topology, bounds, refused, served};
//! use agent_surface::context::ConsumerKind;
//! use agent_surface::error::ErrorPayload;
//! use agent_surface::prelude::*;
//! use serde_json::{Value, json};
//! use std::sync::Arc;
//! use tokio_util::sync::CancellationToken;
//!
//! /// A counter.
//! #[agent_component(type = "demo.counter")]
//! impl Counter {
//!     /// The current value.
//!     #[observation]
//!     fn value(&self) -> u64 {
//!         7
//!     }
//! }
//! struct Counter;
//!
//! /// A line-protocol server: `{"id", "tool", "arguments"}` per line, per client.
//! struct Lines {
//!     views: ConsumerViews,
//! }
//!
//! impl Lines {
//!     fn new(registry: &Registry) -> Lines {
//!         // 1. One set of consumer views for the server.
//!         let views = ConsumerViews::new(registry, ConsumerKind::Other, Topology::Remote);
//!         Lines { views }
//!     }
//!
//!     /// 2. The tools `client` may call now.
//!     fn tools(&self, client: &str) -> Vec<String> {
//!         let Some(view) = self.views.get(client, Some("line client")) else {
//!             return Vec::new(); // an id over the registry's bound
//!         };
//!         let tools = view.current();
//!         served(&tools).map(|tool| tool.name().to_owned()).collect()
//!     }
//!
//!     /// 3 and 4. One request line, answered with one result line.
//!     async fn call(&self, registry: &Registry, client: &str, line: &str) -> Value {
//!         let request: Value = match serde_json::from_str(line) {
//!             Ok(request) => request,
//!             Err(_) => {
//!                 let issue = agent_surface::schema::Issue::new("", "not JSON");
//!                 let error = ErrorPayload::invalid_input(&[issue]);
//!                 return refused(registry, "", None, error).into_line();
//!             }
//!         };
//!         let id = request["id"].as_str().map(str::to_owned);
//!         let tool = request["tool"].as_str().unwrap_or_default();
//!         let tool = bounds::truncated(tool, registry.limits().max_id_bytes);
//!         let Some(view) = self.views.get(client, None) else {
//!             return refused(registry, tool, id, ErrorPayload::cancelled()).into_line();
//!         };
//!         let call = ToolCall::new(tool, request["arguments"].clone()).invocation_id(id);
//!         call.run(view.toolset(), None, CancellationToken::new()).await.into_line()
//!     }
//! }
//!
//! /// The result as the transport sends it (its serialized form).
//! trait Line {
//!     fn into_line(self) -> Value;
//! }
//!
//! impl Line for agent_surface::invoke::InvocationResult {
//!     fn into_line(self) -> Value {
//!         serde_json::to_value(&self).unwrap_or(Value::Null)
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let registry = Registry::default();
//! let _mounted = registry.mount(Arc::new(Counter)).unwrap();
//! let lines = Lines::new(&registry);
//! assert_eq!(lines.tools("client-1"), ["view_demo__counter__value"]);
//! let line = r#"{"id": "req-1", "tool": "view_demo__counter__value", "arguments": {}}"#;
//! let answer = lines.call(&registry, "client-1", line).await;
//! assert_eq!(answer["output"], json!(7));
//! assert_eq!(answer["invocationId"], json!("req-1"));
//! // 6. The client went away.
//! lines.views.end_session("client-1");
//! # });
//! ```

mod ask;
mod confirm;
mod consumer_views;
mod projection;
mod refusal;
mod wait;
mod watch;

pub use ask::{ToolCall, ask_the_person};
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use confirm::answer_on_connection_anywhere;
pub use confirm::{answer_on_connection, approval_prompt};
pub use consumer_views::{ConsumerView, ConsumerViews};
pub use projection::{
    ACT, ConfirmationMode, DISCOVER, ExecuteOptions, Mode, READ, Tool, ToolHints, ToolState,
    ToolTarget, ToolsSubscription, Toolset, ToolsetBuilder, ToolsetError, Topology, WireName,
    meta_block_size, tool_description, wire_name,
};
pub use refusal::refused;
pub use watch::{CallActivity, CallGuard, ChangeWatcher, Mark, same_served, served};

/// Entry bounds an adapter applies before a call reaches the registry.
pub mod bounds {
    pub use crate::invoke::bounds::{id_too_long, too_deep, too_large};
    pub use crate::util::nesting::{PARSE_DEPTH, depth_within, dispose, truncated};
}

/// Time on the platform the runtime runs on, for adapters that wait: an
/// [`Instant`](time::Instant) and sleeps that are tokio's natively (a
/// paused test runtime controls them) and the page's in a browser
/// (`performance.now()`, `setTimeout`), where tokio's timer panics.
pub mod time {
    pub use crate::util::time::{Instant, sleep, sleep_until};
}

/// Host callbacks and values handled without unwinding into the adapter.
pub mod contain {
    pub use crate::util::contain::{Panicked, catch, drop_contained};
}

/// Text shown to a person: hidden characters made visible, long text cut.
pub mod text {
    pub use crate::util::display_text::{escape, truncate};
}

pub use crate::util::lru::Lru;
pub use crate::util::millis::millis;
