//! The adapter kit: the core's public API for code that serves a registry
//! to agents over some transport (the toolset, MCP, a browser's
//! `document.modelContext`). Together with the registry's own API
//! ([`Registry::mint_invocation_id`](crate::Registry::mint_invocation_id),
//! [`Registry::anonymous_consumer`](crate::Registry::anonymous_consumer),
//! [`Registry::forget_consumer`](crate::Registry::forget_consumer),
//! subscriptions, confirmations), it is everything an adapter needs:
//! `toolset` and `mcp` use nothing else of the core (`tests/layers.rs`
//! checks it).
//!
//! - [`bounds`]: the entry bounds an adapter applies to what it parses
//!   before a call reaches the registry (identifier lengths, input depth),
//!   with the same issue texts as the pipeline's.
//! - [`contain`]: running host callbacks contained (a panic becomes a value)
//!   and dropping host values without unwinding into the adapter.
//! - [`text`]: showing agent- or host-supplied text to a person safely.
//! - [`Lru`]: a memory bounded in count with a time to live, for per-session
//!   and per-consumer state an agent can grow.
//! - [`Listeners`]: callbacks registered and called contained.
//! - [`Disposal`]: a one-way disposed signal read with one load.
//! - [`millis`], [`key_pointer`], [`Issues`]: the wire's units, JSON
//!   pointers and bounded issue lists.
//! - [`approval_prompt`], [`answer_on_connection`]: the person's side of a
//!   confirmation asked on the agent's own connection.
//! - [`refused`]: a result the adapter settles itself, before the pipeline.
//!
//! What serving *tools* to many consumers needs — a toolset per consumer
//! and the end of its session, change watching, holding a call open while
//! the person answers — is in [`crate::toolset`] ([`ConsumerViews`](crate::toolset::ConsumerViews),
//! [`ChangeWatcher`](crate::toolset::ChangeWatcher),
//! [`ask_the_person`](crate::toolset::ask_the_person)), the layer every
//! transport adapter builds on.

mod confirm;
mod refusal;

pub use confirm::{answer_on_connection, approval_prompt};
pub use refusal::refused;

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

pub use crate::invoke::{IS_AN_OBSERVATION, IS_NOT_AN_OBSERVATION};
pub use crate::schema::{Issues, key_pointer};
pub use crate::util::disposal::Disposal;
pub use crate::util::listeners::Listeners;
pub use crate::util::lru::Lru;
pub use crate::util::millis::millis;
