//! The Dioxus binding of agent-surface: Dioxus components mount their
//! capabilities while they are rendered, and the application renders the
//! confirmations the agent's calls wait for.
//!
//! - [`use_agent_surface_provider`] makes a [`Registry`] the agent surface
//!   of a subtree (or put it in the `VirtualDom`'s root context);
//!   [`use_registry`] reads it.
//! - [`use_agent_component`] mounts a component on its first render and
//!   unmounts it when the component's scope is dropped; after every render
//!   it re-evaluates the registration's availability
//!   ([`Mounted::invalidate`]), so what the person does in the UI reaches
//!   every consumer (MCP `tools/list_changed`, toolset subscriptions) without
//!   an agent call. [`use_agent_instance`] does the same for repeated
//!   components (list items) under an instance id derived from data, and
//!   remounts when that id changes; [`use_agent_mount`] takes any mount.
//! - [`use_pending_confirmations`] is the list of requests waiting for the
//!   person, with approve and deny, so the application renders the host's
//!   confirmation dialog.
//! - [`passkey`] runs the browser's WebAuthn ceremonies in the person's
//!   page, for approvals that need proof of presence
//!   ([`PendingConfirmations::approve_with_presence`]).
//! - [`use_agent_activity`] is what agents did — every call, request for
//!   approval and answer, with who and through which channel — newest
//!   first and bounded, for an activity panel; [`ActivityLog`] keeps it on
//!   the server for the person, so a reload or a new tab shows what
//!   happened before ([`use_activity_log`]).
//! - [`use_webmcp`] serves the surface to the agent in the page's browser
//!   through WebMCP (`document.modelContext`), calls running on the server
//!   through the full pipeline and approvals left to the person.
//! - [`use_surface_revision`] re-renders a component whenever the surface
//!   moved or an agent call settled, so what the agent did shows at once.
//!
//! Handlers run on the registry's threads, not in the `VirtualDom`: the
//! component given to the registry holds shared state (`Arc<Mutex<…>>` or a
//! store), the Dioxus component renders the same state, and
//! [`use_surface_revision`] brings the agent's changes back to the screen.
//! A mount never outlives its scope, and a changed key remounts, so a stale
//! handler is never called: calls naming an old registration fail typed.
//!
//! [`Registry`]: agent_surface::Registry
//! [`Mounted::invalidate`]: agent_surface::Mounted::invalidate
//!
#![doc = include_str!("../docs/binding.md")]
#![doc = "```rust,no_run"]
#![doc = include_str!("../examples/live_app.rs")]
#![doc = "```"]
#![doc = include_str!("../docs/console.md")]
#![doc = include_str!("../docs/approval.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod activity;
mod activity_log;
mod component;
mod confirmations;
#[cfg(not(target_family = "wasm"))]
mod history;
mod page_panics;
pub mod passkey;
mod provider;
mod revision;
mod webmcp;

pub use activity::{Activity, ActivityEntry, AgentActivity, MAX_ACTIVITY, use_agent_activity};
pub use activity_log::{ActivityLog, MAX_LOG_BYTES, use_activity_log};
pub use component::{
    AgentHandle, AgentMountError, use_agent_component, use_agent_instance, use_agent_mount,
};
pub use confirmations::{
    ANSWER_DELAY_MS, AnswerError, PendingConfirmations, Presented, use_pending_confirmations,
};
#[cfg(not(target_family = "wasm"))]
pub use history::activity_from_audit;
pub use page_panics::contain_page_panics;
pub use provider::{use_agent_surface_provider, use_registry};
pub use revision::use_surface_revision;
pub use webmcp::{WebMcpState, use_webmcp};
