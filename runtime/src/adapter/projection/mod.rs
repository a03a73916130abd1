//! The tool projection: the provider-neutral view of the surface one
//! consumer is served — a [`Toolset`] of tools (direct mode: one per
//! visible capability and procedure reference; meta mode: three constant
//! tools), the authoritative name → target map, and running a tool call
//! through the pipeline with the confirmation posture of its topology.
//! Every adapter serves tools through it: an in-process loop directly
//! ([`crate::toolset`]), MCP and WebMCP per consumer through
//! [`ConsumerViews`](super::ConsumerViews).

mod builder;
mod catalog_cache;
mod meta_mode;
mod running;
mod tool;
mod two_phase;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::adapter::bounds;
use crate::context::Consumer;
use crate::error::ErrorPayload;
use crate::events::Subscription;
use crate::invoke::{Invocation, InvocationResult};
use crate::registry::Registry;
use crate::snapshot::{Budget, SnapshotOptions};
use crate::util::listeners::Listeners;

pub use builder::{ConfirmationMode, Mode, ToolsetBuilder, ToolsetError, Topology};
pub use meta_mode::{ACT, DISCOVER, READ, meta_block_size};
pub use tool::{Tool, ToolHints, ToolState, ToolTarget, tool_description, wire_name};

use meta_mode::meta_tools;
pub(in crate::adapter) use tool::Catalog;

/// One entry of [`Toolset::wire_names`]: a tool name and what it calls.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct WireName {
    /// The tool name the model sees.
    pub name: String,
    /// The capability (or procedure) id it calls.
    pub capability_id: String,
    /// The instance it calls (of the referencing component, for a procedure).
    pub instance_id: String,
}

/// How to run one tool call; see [`Toolset::execute_with_options`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ExecuteOptions<'a> {
    /// The model's tool-call id: it becomes the invocation id.
    pub tool_call_id: Option<&'a str>,
    /// Evidence from an approved confirmation (a model's explicit retry).
    pub confirmation_id: Option<&'a str>,
    /// Firing it settles the call `CANCELLED` (a wait for the user too).
    pub cancellation: Option<CancellationToken>,
}

impl<'a> ExecuteOptions<'a> {
    /// No tool-call id, no evidence, no cancellation.
    pub fn new() -> ExecuteOptions<'a> {
        ExecuteOptions::default()
    }

    /// The model's tool-call id: it becomes the invocation id.
    #[must_use]
    pub fn tool_call_id(mut self, id: Option<&'a str>) -> Self {
        self.tool_call_id = id;
        self
    }

    /// Evidence from an approved confirmation.
    #[must_use]
    pub fn confirmation_id(mut self, id: Option<&'a str>) -> Self {
        self.confirmation_id = id;
        self
    }

    /// Firing `token` settles the call `CANCELLED`.
    #[must_use]
    pub fn cancellation(mut self, token: Option<CancellationToken>) -> Self {
        self.cancellation = token;
        self
    }
}

pub(in crate::adapter) struct Shared {
    pub(in crate::adapter) registry: Registry,
    pub(in crate::adapter) options: SnapshotOptions,
    pub(in crate::adapter) mode: Mode,
    pub(in crate::adapter) confirmations: ConfirmationMode,
    pub(in crate::adapter) budget: Option<Budget>,
    pub(in crate::adapter) built: Mutex<Option<Arc<Catalog>>>,
    pub(in crate::adapter) listeners: Listeners<[Tool]>,
    /// The registry subscription feeding `subscribe`, created on first use.
    pub(in crate::adapter) watch: Mutex<Option<Subscription>>,
    /// The fingerprint subscribers were last told about.
    pub(in crate::adapter) notified: Mutex<Option<u64>>,
    /// Two-phase direct mode: confirmations asked for, by retry key.
    pub(in crate::adapter) asked: Mutex<Vec<(u64, String)>>,
    /// Set by `dispose`: read with one load on every call, awaited by
    /// waits for the person.
    pub(in crate::adapter) disposed: crate::util::disposal::Disposal,
}

/// The toolset of one agent loop. Cheap to clone.
#[derive(Clone)]
pub struct Toolset {
    pub(in crate::adapter) shared: Arc<Shared>,
}

impl fmt::Debug for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolset")
            .field("mode", &self.shared.mode)
            .field("confirmations", &self.shared.confirmations)
            .field("consumer", &self.shared.options.consumer.key())
            .finish_non_exhaustive()
    }
}

/// Stops delivering tool lists when dropped.
#[must_use = "dropping the subscription unsubscribes"]
pub struct ToolsSubscription {
    shared: std::sync::Weak<Shared>,
    id: u64,
}

impl fmt::Debug for ToolsSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolsSubscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for ToolsSubscription {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.listeners.remove(self.id);
        }
    }
}

impl Toolset {
    /// A builder over `registry`.
    pub fn builder(registry: &Registry) -> ToolsetBuilder {
        ToolsetBuilder {
            registry: registry.clone(),
            consumer: None,
            mode: Mode::Direct,
            topology: None,
            confirmations: None,
            scope: Vec::new(),
            budget: None,
        }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.shared.mode
    }

    /// The confirmation mode in effect.
    pub fn confirmation_mode(&self) -> ConfirmationMode {
        self.shared.confirmations
    }

    /// The consumer calls are made as.
    pub fn consumer(&self) -> &Consumer {
        &self.shared.options.consumer
    }

    /// The registry it serves.
    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// The tools now, with their live state. In direct mode this is the
    /// catalog later calls resolve names against (and whose registration
    /// ids and surface version they carry); meta mode returns its three
    /// constant tools.
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        match self.shared.mode {
            Mode::Meta => Arc::clone(meta_tools()),
            Mode::Direct => Arc::clone(&self.shared.rebuild().tools),
        }
    }

    /// The tool named `name` in the catalog the model last saw (no rebuild).
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.catalog().find(name).cloned()
    }

    /// Whether the catalog the model last saw has a tool named `name` (no
    /// rebuild, nothing copied): [`tool`](Self::tool)`(name).is_some()`
    /// without the copy.
    pub fn has_tool(&self, name: &str) -> bool {
        self.catalog().find(name).is_some()
    }

    /// The tool of a given capability (and instance, when several are
    /// live) in the catalog the model last saw: how a host maps a
    /// capability id to a wire name without guessing.
    pub fn tool_for(&self, capability_id: &str, instance_id: Option<&str>) -> Option<Tool> {
        self.catalog()
            .tools
            .iter()
            .find(|tool| {
                tool.target().is_some_and(|target| {
                    target.capability_id == capability_id
                        && instance_id.is_none_or(|i| target.instance_id == i)
                })
            })
            .cloned()
    }

    /// The authoritative wire-name map of the catalog the model last saw:
    /// which capability and instance each tool name calls.
    pub fn wire_names(&self) -> Vec<WireName> {
        self.catalog()
            .tools
            .iter()
            .filter_map(|tool| {
                let target = tool.target()?;
                Some(WireName {
                    name: tool.name().to_owned(),
                    capability_id: target.capability_id.to_owned(),
                    instance_id: target.instance_id.to_owned(),
                })
            })
            .collect()
    }

    /// Re-evaluates the tools and notifies subscribers if anything changed
    /// (definitions or live state). Call it after application state that
    /// `when`/`describe` read has changed without a surface mutation.
    pub fn refresh(&self) {
        self.shared.notify_if_changed();
    }

    /// Calls `listener` with the new tools whenever the catalog or any live
    /// state changes. Dropping the returned handle unsubscribes.
    pub fn subscribe(
        &self,
        listener: impl Fn(&[Tool]) + Send + Sync + 'static,
    ) -> ToolsSubscription {
        let id = self.shared.listeners.add(listener);
        // Built before the lock: building runs host code (policies, `when`,
        // the clock).
        let fingerprint = self.catalog().fingerprint();
        let mut watch = self
            .shared
            .watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if watch.is_none() {
            // Prime the fingerprint, then follow the registry's events.
            *self
                .shared
                .notified
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(fingerprint);
            let weak = Arc::downgrade(&self.shared);
            // Every surface mutation (availability pushes included) ends
            // with `surface-changed`: one rebuild per mutation.
            *watch = Some(self.shared.registry.subscribe(move |event| {
                if matches!(
                    event,
                    crate::events::SurfaceEvent::SurfaceChanged { .. }
                        | crate::events::SurfaceEvent::EventsDropped { .. }
                ) && let Some(shared) = weak.upgrade()
                {
                    shared.notify_if_changed();
                }
            }));
        }
        ToolsSubscription {
            shared: Arc::downgrade(&self.shared),
            id,
        }
    }

    /// Releases the toolset: in-flight confirmation waits settle
    /// `CANCELLED`, subscriptions end, later calls settle `CANCELLED`.
    pub fn dispose(&self) {
        self.shared.disposed.cancel();
        self.shared.listeners.clear();
        let watch = self
            .shared
            .watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let built = self
            .shared
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // Unsubscribed and dropped unlocked (the catalog may own host objects).
        drop(watch);
        crate::adapter::contain::drop_contained("toolset catalog", built);
    }

    /// Whether [`dispose`](Self::dispose) was called.
    pub fn is_disposed(&self) -> bool {
        self.shared.disposed.is_cancelled()
    }

    /// Runs the tool `name` with the model's `input`. The tool-call id
    /// becomes the invocation id (transport retries with the same id join
    /// or replay the first attempt). Never fails: unknown tools, malformed
    /// envelopes and every pipeline error are results.
    pub async fn execute(
        &self,
        name: &str,
        input: Value,
        tool_call_id: Option<&str>,
    ) -> InvocationResult {
        self.execute_with(name, input, tool_call_id, None).await
    }

    /// [`execute`](Self::execute) with confirmation evidence, for hosts
    /// that relay a model's explicit retry. Without evidence, a direct
    /// two-phase call of the same tool with the same input reuses the
    /// confirmation its previous attempt was asked for, so a model retries
    /// by calling the tool again once the user approved.
    pub async fn execute_with(
        &self,
        name: &str,
        input: Value,
        tool_call_id: Option<&str>,
        confirmation_id: Option<&str>,
    ) -> InvocationResult {
        self.execute_with_options(
            name,
            input,
            ExecuteOptions {
                tool_call_id,
                confirmation_id,
                cancellation: None,
            },
        )
        .await
    }

    /// [`execute`](Self::execute) with every option: the tool-call id,
    /// confirmation evidence and an external cancellation (an MCP client's
    /// `notifications/cancelled`, a closed connection) that settles the
    /// call `CANCELLED`.
    pub async fn execute_with_options(
        &self,
        name: &str,
        input: Value,
        options: ExecuteOptions<'_>,
    ) -> InvocationResult {
        let ExecuteOptions {
            tool_call_id,
            confirmation_id,
            cancellation,
        } = options;
        let shared = &self.shared;
        if let Some(refused) = shared.refused_early(name, tool_call_id, &input) {
            bounds::dispose(input);
            return refused;
        }
        match shared.mode {
            Mode::Direct => {
                let catalog = self.catalog();
                let Some(target) = catalog.find(name).and_then(Tool::target) else {
                    return shared.immediate(name, tool_call_id, ErrorPayload::not_found());
                };
                let key = shared.retry_key(name, &input);
                let mut request = Invocation::new(target.capability_id)
                    .instance(target.instance_id)
                    .registration(target.registration_id)
                    .surface_version(itoa::Buffer::new().format(target.surface_version))
                    .input(input);
                request.invocation_id = tool_call_id.map(str::to_owned);
                shared
                    .run_direct(key, request, confirmation_id, cancellation)
                    .await
            }
            Mode::Meta => match name {
                DISCOVER => self.discover(input, tool_call_id),
                READ => self.read(input, tool_call_id, cancellation).await,
                ACT => self.act(input, tool_call_id, cancellation).await,
                _ => shared.immediate(name, tool_call_id, ErrorPayload::not_found()),
            },
        }
    }

    /// The catalog the model last saw (built now if there is none).
    fn catalog(&self) -> Arc<Catalog> {
        self.shared.catalog()
    }
}
