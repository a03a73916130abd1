//! Make AI agents first-class users of a Rust application.
//!
//! A component declares, with attribute macros on an ordinary `impl` block,
//! what an agent may **observe** and **do** while it is mounted: typed
//! capabilities with JSON Schemas, availability rules, effects and
//! confirmation posture. Everything not declared is invisible to the agent.
//! Structural mistakes are compile errors at the offending token.
//!
//! # Example
//! ```
//! use agent_surface::prelude::*;
//! use std::sync::Mutex;
//!
//! /// Replace, extend or reduce the row selection.
//! #[agent_schema]
//! pub struct SelectRows {
//!     /// Device ids to select.
//!     #[schemars(length(min = 1, max = 100), inner(length(max = 64)))]
//!     pub ids: Vec<String>,
//! }
//!
//! /// Visible rows and the current selection.
//! #[agent_schema]
//! pub struct TableState {
//!     pub visible_rows: Vec<String>,
//!     pub selected_ids: Vec<String>,
//! }
//!
//! pub struct DevicesTable {
//!     rows: Vec<String>,
//!     selected: Mutex<Vec<String>>,
//! }
//!
//! /// Table of devices matching the active filters.
//! #[agent_component(type = "devices.table")]
//! impl DevicesTable {
//!     /// Visible rows and the current selection.
//!     #[observation]
//!     fn read_state(&self) -> TableState {
//!         TableState {
//!             visible_rows: self.rows.clone(),
//!             selected_ids: self.selected.lock().map(|s| s.clone()).unwrap_or_default(),
//!         }
//!     }
//!
//!     /// Replace the row selection.
//!     #[action(effect = "local-state", when = "has_rows", unavailable_reason = "No rows are loaded")]
//!     fn select_rows(&self, input: SelectRows) -> Result<(), ActionError> {
//!         if let Some(unknown) = input.ids.iter().find(|id| !self.rows.contains(id)) {
//!             return Err(ActionError::precondition(format!("Row {unknown} is not visible")));
//!         }
//!         *self.selected.lock().map_err(|_| ActionError::failed("poisoned"))? = input.ids;
//!         Ok(())
//!     }
//!
//!     fn has_rows(&self) -> bool {
//!         !self.rows.is_empty()
//!     }
//! }
//!
//! let contract = DevicesTable::contract().checked()?;
//! let select = contract.capability("selectRows").unwrap();
//! assert_eq!(select.id(), "view:devices.table.selectRows");
//! assert_eq!(select.confirmation(), Confirmation::Never); // the defaults table
//! let schema = select.input_schema().unwrap().json();
//! assert_eq!(schema["properties"]["ids"]["minItems"], 1);
//! # Ok::<(), DefinitionError>(())
//! ```
//!
#![doc = include_str!("../docs/attributes.md")]
#![doc = include_str!("../docs/bounds.md")]
#![doc = include_str!("../docs/compiler.md")]
#![doc = include_str!("../docs/guarantees.md")]
#![cfg_attr(feature = "redis", doc = include_str!("../docs/replicas.md"))]
//!
//! # Where to go next
//! - [`prelude`]: the one list of names the quick start uses, also
//!   re-exported at the crate root; everything else lives in its module.
//! - [`registry`]: mount components (and [`procedure`] references), take
//!   per-consumer [`snapshot`]s, run calls through the ten-phase pipeline
//!   ([`invoke`]), drive [`confirmation`]s, read [`audit`] records.
//! - [`webmcp`]: a page serves its surface to the agent in the browser
//!   (`document.modelContext`), calls through the full pipeline.
//! - [`toolset`]: the provider-neutral tools an in-process agent loop hands
//!   to a model (direct or meta mode), with renderers for the major model
//!   APIs.
//! - [`procedure`]: backend operations referenced with live bindings and
//!   forwarded through an executor (feature `mcp-client`: over an MCP session).
//! - `testing` (feature `testing`): the harness for your own tests.
//! - [`catalog`] and [`explain`]: what an agent could ever reach, and why a
//!   consumer sees what it sees.
//! - [`store`]: run the surface on several replicas behind a load balancer,
//!   sharing at-most-once, confirmations, rate limits and the audit.
//! - `mcp` (feature `mcp-server`): serve the surface to any MCP client, and
//!   its HTTP security model.
//! - The `agent-surface-dioxus` crate: a Dioxus app whose components mount
//!   their capabilities while they render, and who may approve; the
//!   `cargo-agent-surface` crate: review and gate the surface in CI.
//!
//! # Names and growth
//! - One list: [`prelude`] holds the names the quick start uses, and the
//!   crate root re-exports exactly that list; every other item is reached
//!   through its module.
//! - Config and request structs are `#[non_exhaustive]`: read their fields
//!   freely; build a config or request struct from `Default` (or its
//!   constructor, such as [`Invocation::new`]) and chainable setters named
//!   after its fields (`Limits::default().action_timeout(…)`), so a new
//!   field never breaks your code.
//!
//! # Layers
//! Modules import one way, bottom to top (checked by `runtime/tests/layers.rs`):
//!
//! | layer | modules |
//! |---|---|
//! | foundations | the grammar (`agent-surface-rules`), [`ids`], [`canonical`], [`wire`], [`clock`], [`store`] (the shared store seam), [`schema`], [`error`], [`audit`], [`context`], [`events`], the call types ([`invoke::Invocation`], …), internal metadata ([`contract::Internal`]) |
//! | contracts | [`policy`] (the vocabulary contracts declare), [`contract`], [`component`], [`procedure`] contracts, their content hashes, the [`catalog`] of every linked contract |
//! | primitives | deduplication, admission and action queues, the [`confirmation`] store (over a narrow services handle the registry implements), the procedure executor trait |
//! | core | [`registry`] (mounts, procedure references, its services handle), [`invoke`] (the pipeline), [`snapshot`], [`explain`], `registry::calls` (the `Registry` methods that run them), the [`adapter`] kit (what adapters use of the core) |
//! | adapters | [`toolset`], `mcp`, [`webmcp`], `testing`, the MCP procedure executor |
//! | generated code | `macro_support` (hidden): what the macros' expansions call and the bounds they check types against, not for direct use |
//!
//! # Features
//! | feature | default | what it adds |
//! |---|---|---|
//! | `mcp` | no | `mcp-server` and `mcp-client` |
//! | `mcp-server` | no | `mcp`: serve a registry to any MCP client over stdio or streamable HTTP (rmcp, axum) |
//! | `mcp-client` | no | `procedure::mcp`: a procedure executor over an MCP client session |
//! | `testing` | no | `testing`: the harness for your own tests, no model needed |
//! | `chrono` | no | schemas for chrono's `DateTime<Tz>` and `NaiveDate` |
//! | `uuid` | no | schemas for `uuid::Uuid` |
//! | `url` | no | schemas for `url::Url` |
//! | `redis` | no | `store::RedisStore`: replicas share at-most-once, confirmations, rate limits and the audit on a Redis or Valkey server |
//!
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod adapter;
pub mod audit;
pub mod canonical;
pub mod catalog;
pub mod clock;
pub mod component;
pub mod confirmation;
pub mod context;
pub mod contract;
pub mod error;
pub mod events;
pub mod explain;
mod hashes;
pub mod ids;
mod internal_meta;
mod invocation;
pub mod invoke;
#[cfg(feature = "mcp-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp-server")))]
pub mod mcp;
pub mod policy;
mod primitives;
pub mod procedure;
pub mod registry;
pub mod schema;
pub mod snapshot;
pub mod store;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
pub mod toolset;
mod util;
pub mod webmcp;
pub mod wire;

/// Makes a struct or enum usable as a capability input or output: serde and
/// schemars derives with the surface's wire conventions, checked against
/// the schema subset at compile time (see the macro's own page for every
/// option).
///
/// Every string, list, map or free-form value an agent can send is bounded,
/// or declared `unbounded` (left to the registry's `Limits::max_input_bytes`),
/// checked at compile time where the type is taken as an input:
///
/// ```
/// use agent_surface::prelude::*;
///
/// /// Tags to set.
/// #[agent_schema]
/// pub struct SetTags {
///     /// 1 to 10 tags of at most 32 characters.
///     #[schemars(length(min = 1, max = 10), inner(length(max = 32)))]
///     pub tags: Vec<String>,
///     /// Free-form settings, bounded by the registry's input limit only.
///     #[agent_schema(unbounded)]
///     pub extra: Option<serde_json::Value>,
/// }
///
/// struct Panel;
///
/// /// A panel.
/// #[agent_component(type = "demo.panel")]
/// impl Panel {
///     /// Sets the tags.
///     #[action(effect = "local-state")]
///     fn set_tags(&self, input: SetTags) -> usize {
///         input.tags.len()
///     }
/// }
///
/// let contract = Panel::contract().checked()?;
/// let schema = contract.capability("setTags").unwrap().input_schema().unwrap();
/// assert_eq!(schema.json()["properties"]["tags"]["maxItems"], 10);
/// # Ok::<(), agent_surface::DefinitionError>(())
/// ```
#[doc(inline)]
pub use agent_surface_macros::agent_schema;
/// Every key of `#[agent_component]`, `#[observation]` and `#[action]` in
/// one component:
///
/// ```
/// use agent_surface::policy::{authenticated, has_permission};
/// use agent_surface::prelude::*;
///
/// /// A panel of the demo page.
/// #[agent_component(
///     type = "demo.panel",
///     instance = "main",
///     priority = 5,
///     origin = "first-party",
///     enabled = true,
///     parent(type = "demo.page", instance = "main"),
///     meta(area = "demo"),
///     internal(tenant = "acme"),
///     policies = [authenticated()],
/// )]
/// impl Panel {
///     /// Whether the panel is open.
///     #[observation(name = "isOpen", when = ready, unavailable_reason = "Still loading",
///                   timeout = "2s", meta(unit = "flag"), policies = [has_permission("demo:read")])]
///     fn open(&self) -> bool {
///         true
///     }
///
///     /// Clear the panel.
///     #[action(effect = "local-state", idempotent = true, reversible = false,
///              confirmation = "required", audit = "full", concurrency = "parallel(2)",
///              queue_depth = 4, timeout = "5s", internal(kind = "reset"))]
///     fn clear(&self) {}
///
///     fn ready(&self) -> bool {
///         true
///     }
/// }
/// struct Panel;
///
/// let contract = Panel::contract().checked()?;
/// assert_eq!(contract.capability("isOpen").unwrap().id(), "view:demo.panel.isOpen");
/// assert_eq!(contract.capability("clear").unwrap().confirmation(), Confirmation::Required);
/// # Ok::<(), agent_surface::DefinitionError>(())
/// ```
#[doc(inline)]
pub use agent_surface_macros::{action, agent_component, observation};
pub use agent_surface_macros::{agent_procedure, reference};

#[doc(inline)]
pub use prelude::*;

/// The one list of names users meet: what the quick start and an ordinary
/// application need — the macros, the registry and its calls, the contexts
/// handlers take, and the error types of the quick start (`?` on a
/// contract's `checked()` and on [`Registry::mount`] included).
///
/// The crate root re-exports exactly this list, so `agent_surface::X` and
/// `use agent_surface::prelude::*` always name the same items; everything
/// else is reached through its module ([`registry::Limits`],
/// [`policy::Policy`], [`toolset::Toolset`], …).
pub mod prelude {
    pub use crate::component::{Component, HandlerError, HandlerReturn, ObservationReturn};
    pub use crate::context::{
        ActionContext, Consumer, ConsumerKind, Environment, HostContext, ReadContext,
    };
    pub use crate::error::{
        ActionError, DefinitionError, ErrorCode, ErrorPayload, PreconditionFailure, Retry,
    };
    pub use crate::invoke::{Invocation, InvocationResult, InvokeOptions};
    pub use crate::procedure::{Procedure, ProcedureRef};
    pub use crate::registry::{MountError, Mounted, Registry};
    pub use crate::schema::{AgentInput, AgentOutput, AgentSchema};
    pub use crate::snapshot::{Snapshot, SnapshotOptions};
    pub use crate::{
        action, agent_component, agent_procedure, agent_schema, observation, reference,
    };
    pub use agent_surface_rules::{Audit, Confirmation, Effect, Kind, Plane};
}

/// Support for generated code. Not public API: no stability guarantees.
#[doc(hidden)]
pub mod macro_support;
