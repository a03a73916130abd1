//! The in-process adapter: the toolset an agent loop in the same process
//! hands to a model — the provider-neutral projection of the surface.
//!
//! - **Direct mode**: one tool per visible capability and procedure
//!   reference. Tool names are wire names (`view_devices__table__selectRows`,
//!   `_at_<instance>` when several instances are live); the toolset keeps the
//!   authoritative name → target map. Descriptions carry plane, effect and
//!   confirmation posture, never live state; live state is [`ToolState`]
//!   (available, reason, note), kept apart so tool definitions stay
//!   byte-identical across snapshots that differ only in state, and provider
//!   prompt caches hold.
//! - **Meta mode**: three constant tools, `surface_discover`, `surface_read`
//!   and `surface_act`, whose size does not grow with the catalog.
//! - [`execute`](Toolset::execute) fills the invocation id from the tool-call
//!   id, attaches the registration id and surface version of the catalog the
//!   model saw, and never fails: every outcome is an [`InvocationResult`](crate::invoke::InvocationResult).
//! - **Topology**: an `embedded` loop waits for the user's confirmation and
//!   retries by itself (the model sees one call, one result); a `remote` loop
//!   hands `CONFIRMATION_REQUIRED` to the model (two-phase). One of the two
//!   (or an explicit [`ConfirmationMode`]) is required.
//! - **Built on the adapter kit** ([`crate::adapter`]), like MCP and
//!   WebMCP: the types here are the kit's tool projection, which an
//!   in-process loop uses directly, plus [`render`]ers for the tool formats
//!   of model providers. A transport serving many consumers uses the kit's
//!   [`ConsumerViews`](crate::adapter::ConsumerViews) instead.
//!
//! ```
//! use agent_surface::prelude::*;
//! use agent_surface::toolset::{Toolset, Topology};
//! use std::sync::Arc;
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
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let registry = Registry::default();
//! let _mounted = registry.mount(Arc::new(Counter)).unwrap();
//! let toolset = Toolset::builder(&registry)
//!     .topology(Topology::Embedded)
//!     .build()
//!     .unwrap();
//! let tools = toolset.tools();
//! assert_eq!(tools[0].name(), "view_demo__counter__value");
//! let result = toolset.execute("view_demo__counter__value", serde_json::json!({}), Some("call_1")).await;
//! assert_eq!(result.output(), Some(&serde_json::json!(7)));
//! assert_eq!(result.invocation_id(), "call_1");
//! # });
//! ```
#![doc = include_str!("../../docs/toolset.md")]

pub mod render;

pub use crate::adapter::{
    ACT, ConfirmationMode, DISCOVER, ExecuteOptions, Mode, READ, Tool, ToolHints, ToolState,
    ToolTarget, ToolsSubscription, Toolset, ToolsetBuilder, ToolsetError, Topology, WireName,
    meta_block_size, tool_description, wire_name,
};
