//! The embedded toolset: the provider-neutral projection of the surface that
//! an in-process agent loop hands to a model.
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
//!   model saw, and never fails: every outcome is an [`InvocationResult`].
//! - **Topology**: an `embedded` loop waits for the user's confirmation and
//!   retries by itself (the model sees one call, one result); a `remote` loop
//!   hands `CONFIRMATION_REQUIRED` to the model (two-phase). One of the two
//!   (or an explicit [`ConfirmationMode`]) is required.
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

pub mod render;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::canonical::{Sink, write_canonical};
use crate::context::Consumer;
use crate::contract::CheckedCapability;
use crate::error::{ErrorCode, ErrorPayload};
use crate::events::Subscription;
use crate::ids::{CapabilityId, InstanceId};
use crate::invoke::bounds;
use crate::invoke::{Invocation, InvocationResult, InvokeOptions, Kinds};
use crate::procedure::Reference;
use crate::registry::Registration;
use crate::registry::Registry;
use crate::schema::{Issue, Issues, key_pointer};
use crate::snapshot::{Budget, Snapshot, SnapshotOptions, in_scope};
use crate::util::listeners::Listeners;
use crate::wire::{MAX_WIRE_NAME, WireNames};
use crate::{Confirmation, Effect, Kind};

/// One tool per capability, or three generic tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// One tool per visible capability and procedure reference.
    #[default]
    Direct,
    /// `surface_discover`, `surface_read`, `surface_act`.
    Meta,
}

/// Where the agent loop runs, which decides how confirmations are handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// In the application's process: wait for the user and retry.
    Embedded,
    /// Elsewhere (a remote model loop): hand the confirmation to the model.
    Remote,
}

/// How `CONFIRMATION_REQUIRED` is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfirmationMode {
    /// Wait for the user's decision (up to the TTL) and retry with the
    /// evidence: the model sees one call and one final result.
    Wait,
    /// Return `CONFIRMATION_REQUIRED` to the model, which retries with the
    /// confirmation id.
    TwoPhase,
}

impl Topology {
    /// The confirmation mode this topology implies.
    pub fn confirmations(self) -> ConfirmationMode {
        match self {
            Topology::Embedded => ConfirmationMode::Wait,
            Topology::Remote => ConfirmationMode::TwoPhase,
        }
    }
}

/// Why a toolset could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolsetError {
    /// Neither a topology nor a confirmation mode was given; there is no
    /// global default because the right one depends on where the loop runs.
    TopologyRequired,
    /// The registry was disposed.
    Disposed,
}

impl fmt::Display for ToolsetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolsetError::TopologyRequired => f.write_str(
                "a toolset needs `.topology(Topology::Embedded | Topology::Remote)` or an explicit `.confirmations(...)`",
            ),
            ToolsetError::Disposed => f.write_str("the registry was disposed"),
        }
    }
}

impl std::error::Error for ToolsetError {}

/// Builds a [`Toolset`].
#[must_use]
#[derive(Debug)]
pub struct ToolsetBuilder {
    registry: Registry,
    consumer: Option<Consumer>,
    mode: Mode,
    topology: Option<Topology>,
    confirmations: Option<ConfirmationMode>,
    scope: Vec<String>,
    budget: Option<Budget>,
}

impl ToolsetBuilder {
    /// The consumer every call is made as (default `embedded:anonymous`).
    /// Give each agent loop its own stable identity.
    pub fn consumer(mut self, consumer: Consumer) -> Self {
        self.consumer = Some(consumer);
        self
    }

    /// Direct (default) or meta mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Where the loop runs (sets the confirmation mode's default).
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// The confirmation mode, overriding the topology's default.
    pub fn confirmations(mut self, mode: ConfirmationMode) -> Self {
        self.confirmations = Some(mode);
        self
    }

    /// Component-type prefixes the toolset is limited to: a floor that a
    /// model-supplied scope may narrow and never widen.
    pub fn scope(mut self, prefixes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scope = prefixes.into_iter().map(Into::into).collect();
        self
    }

    /// A snapshot budget for `surface_discover` (meta mode only).
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Builds the toolset; fails without a topology or confirmation mode.
    pub fn build(self) -> Result<Toolset, ToolsetError> {
        let confirmations = match (self.confirmations, self.topology) {
            (Some(mode), _) => mode,
            (None, Some(topology)) => topology.confirmations(),
            (None, None) => return Err(ToolsetError::TopologyRequired),
        };
        if self.registry.is_disposed() {
            return Err(ToolsetError::Disposed);
        }
        let consumer = self
            .consumer
            .unwrap_or_else(|| self.registry.inner.anonymous.clone());
        Ok(Toolset {
            shared: Arc::new(Shared {
                options: SnapshotOptions {
                    consumer,
                    scope: self.scope,
                    include_unavailable: true,
                    budget: None,
                },
                registry: self.registry,
                mode: self.mode,
                confirmations,
                budget: self.budget,
                built: Mutex::new(None),
                listeners: Listeners::default(),
                watch: Mutex::new(None),
                notified: Mutex::new(None),
                asked: Mutex::new(Vec::new()),
                disposed: CancellationToken::new(),
            }),
        })
    }
}

/// The live state of a tool: volatile, rendered by hosts outside the cached
/// tool block.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolState {
    /// Whether a call would pass availability now.
    pub available: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Live contextual text (a procedure reference's `describe`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How to run one tool call; see [`Toolset::execute_with_options`].
#[derive(Clone, Debug, Default)]
pub struct ExecuteOptions<'a> {
    /// The model's tool-call id: it becomes the invocation id.
    pub tool_call_id: Option<&'a str>,
    /// Evidence from an approved confirmation (a model's explicit retry).
    pub confirmation_id: Option<&'a str>,
    /// Firing it settles the call `CANCELLED` (a wait for the user too).
    pub cancellation: Option<CancellationToken>,
}

/// What a direct-mode tool calls: the target as the catalog saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolTarget<'a> {
    /// The capability (or procedure) id.
    pub capability_id: &'a str,
    /// The instance (of the referencing component, for a procedure).
    pub instance_id: &'a str,
    /// The registration the catalog was built from.
    pub registration_id: &'a str,
    /// The surface version the catalog was built at.
    pub surface_version: u64,
    /// Observation, action or procedure.
    pub kind: Kind,
    /// The effect.
    pub effect: Effect,
    /// The confirmation posture.
    pub confirmation: Confirmation,
    /// Whether repeating the call changes nothing more.
    pub idempotent: bool,
}

/// Where a tool's definition comes from. Definitions are borrowed from the
/// static contracts and the registrations, never copied.
#[derive(Clone)]
enum Source {
    View {
        registration: Arc<Registration>,
        capability: &'static CheckedCapability,
        index: usize,
        qualified: bool,
    },
    Domain {
        registration: Arc<Registration>,
        reference: Arc<Reference>,
        name: Box<str>,
    },
    Meta(&'static MetaTool),
}

/// One tool as a model sees it, plus its live state and target.
#[derive(Clone)]
pub struct Tool {
    source: Source,
    /// A shortened name, when the canonical one is too long.
    renamed: Option<Box<str>>,
    state: ToolState,
    surface_version: u64,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name())
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Tool {
    fn eq(&self, other: &Tool) -> bool {
        self.name() == other.name()
            && self.description() == other.description()
            && self.input_schema() == other.input_schema()
            && self.state == other.state
            && self.target() == other.target()
    }
}

impl Tool {
    /// The wire-safe name (at most 64 characters of `[A-Za-z0-9_-]`).
    pub fn name(&self) -> &str {
        if let Some(name) = &self.renamed {
            return name;
        }
        match &self.source {
            Source::View {
                registration,
                capability,
                index,
                qualified,
            } => {
                if *qualified {
                    registration.qualified_tool_name(*index)
                } else {
                    capability.wire_name()
                }
            }
            Source::Domain { name, .. } => name,
            Source::Meta(meta) => meta.name,
        }
    }

    /// Plane, effect and confirmation, then the authored description.
    pub fn description(&self) -> &str {
        match &self.source {
            Source::View { capability, .. } => capability.tool_description(),
            Source::Domain { reference, .. } => reference.capability.tool_description(),
            Source::Meta(meta) => meta.description,
        }
    }

    /// The JSON Schema of the tool's input (an object schema).
    pub fn input_schema(&self) -> &Value {
        match &self.source {
            Source::View { capability, .. } => match capability.kind() {
                Kind::Observation => empty_input_schema(),
                _ => capability
                    .input_schema()
                    .map_or(empty_input_schema(), |schema| &**schema.json()),
            },
            Source::Domain { reference, .. } => reference
                .capability
                .input_schema()
                .map_or(empty_input_schema(), |schema| &**schema.json()),
            Source::Meta(meta) => &meta.schema,
        }
    }

    /// The live state.
    pub fn state(&self) -> &ToolState {
        &self.state
    }

    /// What the tool calls (`None` for meta-mode tools).
    pub fn target(&self) -> Option<ToolTarget<'_>> {
        let (registration, capability) = match &self.source {
            Source::View {
                registration,
                capability,
                ..
            } => (registration, *capability),
            Source::Domain {
                registration,
                reference,
                ..
            } => (registration, &reference.capability),
            Source::Meta(_) => return None,
        };
        Some(ToolTarget {
            capability_id: capability.id().as_str(),
            instance_id: registration.instance.as_str(),
            registration_id: &registration.id,
            surface_version: self.surface_version,
            kind: capability.kind(),
            effect: capability.effect(),
            confirmation: capability.confirmation(),
            idempotent: capability.idempotent(),
        })
    }

    /// The definition a provider sees: `{name, description, inputSchema}`.
    pub fn definition(&self) -> Value {
        json!({
            "name": self.name(),
            "description": self.description(),
            "inputSchema": self.input_schema(),
        })
    }
}

/// One built catalog: the tools and a lazily built name index.
struct Catalog {
    tools: Arc<Vec<Tool>>,
    by_name: std::sync::OnceLock<FxHashMap<u64, usize>>,
}

fn name_hash(name: &str) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    name.hash(&mut hasher);
    hasher.finish()
}

impl Catalog {
    fn new(tools: Vec<Tool>) -> Catalog {
        Catalog {
            tools: Arc::new(tools),
            by_name: std::sync::OnceLock::new(),
        }
    }

    /// The tool named `name` (names are unique within a catalog).
    fn find(&self, name: &str) -> Option<&Tool> {
        let index = self.by_name.get_or_init(|| {
            let mut map = FxHashMap::default();
            map.reserve(self.tools.len());
            for (index, tool) in self.tools.iter().enumerate() {
                map.insert(name_hash(tool.name()), index);
            }
            map
        });
        index
            .get(&name_hash(name))
            .and_then(|&i| self.tools.get(i))
            .filter(|tool| tool.name() == name)
            .or_else(|| self.tools.iter().find(|tool| tool.name() == name))
    }

    /// Definitions and live state, for change notifications.
    fn fingerprint(&self) -> u64 {
        let mut hasher = rustc_hash::FxHasher::default();
        for tool in self.tools.iter() {
            tool.name().hash(&mut hasher);
            tool.description().hash(&mut hasher);
            tool.state.hash(&mut hasher);
            if let Some(target) = tool.target() {
                target.registration_id.hash(&mut hasher);
            }
        }
        hasher.finish()
    }
}

struct Shared {
    registry: Registry,
    options: SnapshotOptions,
    mode: Mode,
    confirmations: ConfirmationMode,
    budget: Option<Budget>,
    built: Mutex<Option<Arc<Catalog>>>,
    listeners: Listeners<[Tool]>,
    /// The registry subscription feeding `subscribe`, created on first use.
    watch: Mutex<Option<Subscription>>,
    /// The fingerprint subscribers were last told about.
    notified: Mutex<Option<u64>>,
    /// Two-phase direct mode: confirmations asked for, by retry key.
    asked: Mutex<Vec<(u64, String)>>,
    disposed: CancellationToken,
}

/// The toolset of one agent loop. Cheap to clone.
#[derive(Clone)]
pub struct Toolset {
    shared: Arc<Shared>,
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
    /// `(wire name, capability id, instance id)`.
    pub fn wire_names(&self) -> Vec<(String, String, String)> {
        self.catalog()
            .tools
            .iter()
            .filter_map(|tool| {
                let target = tool.target()?;
                Some((
                    tool.name().to_owned(),
                    target.capability_id.to_owned(),
                    target.instance_id.to_owned(),
                ))
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
        let mut watch = self
            .shared
            .watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if watch.is_none() {
            // Prime the fingerprint, then follow the registry's events.
            let fingerprint = self.catalog().fingerprint();
            *self
                .shared
                .notified
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(fingerprint);
            let weak = Arc::downgrade(&self.shared);
            // Every surface mutation (availability pushes included) ends
            // with `surface-changed`: one rebuild per mutation.
            *watch = Some(self.shared.registry.subscribe(move |event| {
                if matches!(event, crate::events::SurfaceEvent::SurfaceChanged { .. })
                    && let Some(shared) = weak.upgrade()
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
        *self
            .shared
            .watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        *self
            .shared
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
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
        if shared.disposed.is_cancelled() {
            return shared.immediate(name, tool_call_id, ErrorPayload::cancelled());
        }
        if let Err(error) = shared.check_depth(&input) {
            bounds::dispose(input);
            return shared.immediate(name, tool_call_id, error);
        }
        match shared.mode {
            Mode::Direct => {
                let catalog = self.catalog();
                let Some(target) = catalog.find(name).and_then(Tool::target) else {
                    return shared.immediate(name, tool_call_id, ErrorPayload::not_found());
                };
                let key = retry_key(name, &input);
                let mut request = Invocation::new(target.capability_id)
                    .instance(target.instance_id)
                    .registration(target.registration_id)
                    .surface_version(target.surface_version.to_string())
                    .input(input);
                request.invocation_id = tool_call_id.map(str::to_owned);
                request.confirmation_id = confirmation_id
                    .map(str::to_owned)
                    .or_else(|| shared.remembered(key));
                let result = shared.run(request, Kinds::All, cancellation).await;
                shared.remember(key, &result);
                result
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

/// Identifies "the same call again": the tool and the canonical input.
fn retry_key(name: &str, input: &Value) -> u64 {
    let mut hasher = crate::canonical::Fnv1a64::new();
    crate::canonical::write_string(name, &mut hasher);
    write_canonical(input, &mut hasher);
    hasher.finish()
}

impl Shared {
    /// The confirmation a previous attempt of the same call was asked for.
    fn remembered(&self, key: u64) -> Option<String> {
        if self.confirmations != ConfirmationMode::TwoPhase {
            return None;
        }
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, id)| id.clone())
    }

    /// Remembers a confirmation request (two-phase), forgets it once the
    /// call settled any other way. Bounded by the pending-confirmation limit.
    fn remember(&self, key: u64, result: &InvocationResult) {
        if self.confirmations != ConfirmationMode::TwoPhase {
            return;
        }
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        asked.retain(|(k, _)| *k != key);
        let requested = result
            .error()
            .filter(|error| error.code() == ErrorCode::ConfirmationRequired)
            .and_then(|error| error.detail("confirmationId"))
            .and_then(Value::as_str);
        if let Some(id) = requested {
            let cap = self
                .registry
                .limits()
                .max_pending_confirmations_per_consumer
                .max(1);
            while asked.len() >= cap {
                asked.remove(0);
            }
            asked.push((key, id.to_owned()));
        }
    }

    /// The catalog the model last saw (built now if there is none).
    fn catalog(&self) -> Arc<Catalog> {
        let built = self
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        built.unwrap_or_else(|| self.rebuild())
    }

    /// A fresh catalog, kept as the one later calls resolve against.
    fn rebuild(&self) -> Arc<Catalog> {
        let catalog = Arc::new(self.build());
        *self.built.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&catalog));
        catalog
    }

    /// Builds the direct-mode catalog from one snapshot.
    fn build(&self) -> Catalog {
        let snapshot = self.registry.snapshot(&self.options);
        build_catalog(&snapshot)
    }

    fn notify_if_changed(&self) {
        if self.disposed.is_cancelled() || self.mode == Mode::Meta {
            return;
        }
        let catalog = self.rebuild();
        let fingerprint = catalog.fingerprint();
        let before = self
            .notified
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(fingerprint);
        if before == Some(fingerprint) {
            return;
        }
        self.listeners.call(&catalog.tools, "toolset");
    }

    /// Refuses arguments nested deeper than the pipeline accepts before
    /// the toolset walks them (a retry key, a copy of the request); the
    /// pipeline checks every other bound itself. In meta mode the bound
    /// applies to each envelope field, named in the issue.
    fn check_depth(&self, input: &Value) -> Result<(), ErrorPayload> {
        let max = self.registry.limits().max_input_depth;
        let issue = match (self.mode, input) {
            (Mode::Meta, Value::Object(fields)) => fields
                .iter()
                .find(|(_, value)| !bounds::depth_within(value, max))
                .map(|(key, _)| bounds::too_deep(&key_pointer(key), max)),
            _ => (!bounds::depth_within(input, max)).then(|| bounds::too_deep("", max)),
        };
        match issue {
            Some(issue) => Err(ErrorPayload::invalid_input(&[issue])),
            None => Ok(()),
        }
    }

    /// A result settled by the toolset itself (unknown tool, envelope
    /// error, discovery), under the tool-call id or a fresh invocation id.
    /// A tool-call id or tool name over `max_id_bytes` is never echoed: the
    /// id is replaced by a fresh one, the name cut to the limit.
    fn settled(
        &self,
        name: &str,
        tool_call_id: Option<&str>,
        outcome: Result<Option<Arc<Value>>, ErrorPayload>,
    ) -> InvocationResult {
        let max = self.registry.limits().max_id_bytes;
        let invocation_id: Arc<str> = match tool_call_id {
            Some(id) if id.len() <= max => Arc::from(id),
            _ => Arc::from(self.registry.inner.ids.invocation_id()),
        };
        InvocationResult::new(
            invocation_id,
            Arc::from(bounds::truncated(name, max)),
            outcome,
            self.registry.version(),
            false,
        )
    }

    fn immediate(
        &self,
        name: &str,
        tool_call_id: Option<&str>,
        error: ErrorPayload,
    ) -> InvocationResult {
        self.settled(name, tool_call_id, Err(error))
    }

    /// One call through the pipeline; in wait mode a confirmation request
    /// waits for the user and the call is retried with the evidence.
    async fn run(
        &self,
        request: Invocation,
        kinds: Kinds,
        cancellation: Option<CancellationToken>,
    ) -> InvocationResult {
        let result = self.run_once_or_wait(request, kinds, cancellation).await;
        with_verb_hint(result)
    }

    async fn run_once_or_wait(
        &self,
        request: Invocation,
        kinds: Kinds,
        cancellation: Option<CancellationToken>,
    ) -> InvocationResult {
        let external = cancellation.clone();
        let options = InvokeOptions {
            scope: self.options.scope.clone(),
            cancellation,
            kinds,
            ..InvokeOptions::consumer(self.options.consumer.clone())
        };
        let mut request = request;
        if request.invocation_id.is_none() {
            // The retry after a confirmation must reuse the attempt's id.
            request.invocation_id = Some(self.registry.inner.ids.invocation_id());
        }
        let first = self.registry.invoke(request.clone(), options.clone()).await;
        if self.confirmations != ConfirmationMode::Wait || request.confirmation_id.is_some() {
            return first;
        }
        let Some(confirmation_id) = first
            .error()
            .filter(|error| error.code() == ErrorCode::ConfirmationRequired)
            .and_then(|error| error.detail("confirmationId"))
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return first;
        };
        let controller = self.registry.confirmations();
        let cancelled = async {
            match &external {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = controller.wait_for(&confirmation_id) => {}
            () = cancelled => {
                return self.immediate(
                    first.capability_id(),
                    Some(first.invocation_id()),
                    ErrorPayload::cancelled(),
                );
            }
            () = self.disposed.cancelled() => {
                return self.immediate(
                    first.capability_id(),
                    Some(first.invocation_id()),
                    ErrorPayload::cancelled(),
                );
            }
        }
        // Approved, denied or expired: the retry reports which.
        self.registry
            .invoke(request.confirmation(confirmation_id), options)
            .await
    }
}

/// The meta verbs' hint for a target of the wrong kind: the pipeline says
/// what the target is; the toolset says which verb to use.
fn with_verb_hint(result: InvocationResult) -> InvocationResult {
    let hint = match result.error() {
        Some(error) if error.code() == ErrorCode::InvalidInput => {
            let issue = error
                .detail("issues")
                .and_then(Value::as_array)
                .and_then(|issues| issues.first())
                .filter(|issue| issue.get("path").and_then(Value::as_str) == Some("/capabilityId"))
                .and_then(|issue| issue.get("message"))
                .and_then(Value::as_str);
            match issue {
                Some(crate::call::IS_AN_OBSERVATION) => {
                    "this capability is an observation; read it with surface_read"
                }
                Some(crate::call::IS_NOT_AN_OBSERVATION) => {
                    "this capability is not an observation; call it with surface_act"
                }
                _ => return result,
            }
        }
        _ => return result,
    };
    InvocationResult::new(
        Arc::from(result.invocation_id()),
        Arc::from(result.capability_id()),
        Err(ErrorPayload::invalid_input(&[Issue::new(
            "/capabilityId",
            hint,
        )])),
        result.surface_version(),
        result.surface_changed(),
    )
}

/// Builds the tools of one snapshot.
fn build_catalog(snapshot: &Snapshot) -> Catalog {
    let components = snapshot.components();
    let procedures = snapshot.procedures();
    let version = snapshot.surface_version();
    let mut tools: Vec<Tool> = Vec::with_capacity(components.len() * 2 + procedures.len());
    // Several live instances of a type are qualified with `_at_<instance>`.
    // Components come sorted by (priority, type, instance), so instances of
    // a type form runs: count per run, not per component.
    let mut instances: FxHashMap<&str, usize> = FxHashMap::default();
    let mut run: Option<(&str, usize)> = None;
    for component in components {
        let own = component.component_type();
        match &mut run {
            Some((current, length)) if *current == own => *length += 1,
            _ => {
                if let Some((current, length)) = run.take() {
                    *instances.entry(current).or_default() += length;
                }
                run = Some((own, 1));
            }
        }
    }
    if let Some((current, length)) = run {
        *instances.entry(current).or_default() += length;
    }
    for component in components {
        let qualified = instances
            .get(component.component_type())
            .is_some_and(|count| *count > 1);
        let registration = component.registration();
        for (index, capability) in component.capabilities_indexed() {
            tools.push(Tool {
                source: Source::View {
                    registration: Arc::clone(registration),
                    capability: capability.contract(),
                    index,
                    qualified,
                },
                renamed: None,
                state: ToolState {
                    available: capability.available(),
                    unavailable_reason: capability.unavailable_reason().map(str::to_owned),
                    note: None,
                },
                surface_version: version,
            });
        }
    }
    for procedure in procedures {
        let siblings: Vec<&crate::snapshot::ProcedureView> = procedures
            .iter()
            .filter(|other| other.procedure_id() == procedure.procedure_id())
            .collect();
        let base = procedure.capability().wire_name();
        let name = if siblings.len() < 2 {
            base.to_owned()
        } else if siblings
            .iter()
            .filter(|other| other.instance_id() == procedure.instance_id())
            .nth(1)
            .is_some()
        {
            // Two referencing components share the instance id: add the type.
            format!(
                "{base}_at_{}-{}",
                procedure.component_type().replace('.', "-"),
                procedure.instance_id()
            )
        } else {
            format!("{base}_at_{}", procedure.instance_id())
        };
        tools.push(Tool {
            source: Source::Domain {
                registration: Arc::clone(procedure.registration()),
                reference: Arc::clone(procedure.reference()),
                name: name.into_boxed_str(),
            },
            renamed: None,
            state: ToolState {
                available: procedure.available(),
                unavailable_reason: procedure.unavailable_reason().map(str::to_owned),
                note: procedure.contextual_note().map(str::to_owned),
            },
            surface_version: version,
        });
    }
    shorten_long_names(&mut tools);
    Catalog::new(tools)
}

/// Canonical names are unique by construction (the encoding is injective
/// and instances of one type are distinct). A name over 64 characters is
/// shortened with a deterministic hash; when any is, the whole catalog is
/// named by [`WireNames`] so shortened names cannot collide.
fn shorten_long_names(tools: &mut [Tool]) {
    if tools.iter().all(|tool| tool.name().len() <= MAX_WIRE_NAME) {
        return;
    }
    let entry = |tool: &Tool| -> Option<(CapabilityId, Option<InstanceId>)> {
        let target = tool.target()?;
        let id = CapabilityId::new(target.capability_id).ok()?;
        let qualifier = tool
            .name()
            .rsplit_once("_at_")
            .and_then(|(_, q)| InstanceId::new(q).ok());
        Some((id, qualifier))
    };
    let entries: Vec<(CapabilityId, Option<InstanceId>)> = tools.iter().filter_map(entry).collect();
    let names = WireNames::assign(entries);
    for tool in tools.iter_mut() {
        let Some((id, qualifier)) = entry(tool) else {
            continue;
        };
        if let Some(name) = names.name_of(&id, qualifier.as_ref())
            && name != tool.name()
        {
            tool.renamed = Some(Box::from(name));
        }
    }
}

/// The input schema of tools that take no input.
fn empty_input_schema() -> &'static Value {
    static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EMPTY.get_or_init(crate::schema::empty_object_schema)
}

// ---------------------------------------------------------------------------
// Meta mode

/// The discover verb.
pub const DISCOVER: &str = "surface_discover";
/// The read verb.
pub const READ: &str = "surface_read";
/// The act verb.
pub const ACT: &str = "surface_act";

/// One meta-mode verb.
struct MetaTool {
    name: &'static str,
    description: &'static str,
    schema: Value,
}

fn meta_definitions() -> &'static [MetaTool; 3] {
    static DEFINITIONS: std::sync::OnceLock<[MetaTool; 3]> = std::sync::OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        [
            MetaTool {
                name: DISCOVER,
                description: "List what you can observe and do in the application now: components with their observations and actions, and backend procedures, each with its input schema and availability. Call it first, and again when a result says surfaceChanged.",
                schema: json!({
                    "type": "object",
                    "properties": {
                        "scope": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Component-type prefixes to narrow the listing to, e.g. [\"devices.table\"]."
                        }
                    },
                    "additionalProperties": false
                }),
            },
            MetaTool {
                name: READ,
                description: "Read an observation listed by surface_discover. Returns its current value.",
                schema: json!({
                    "type": "object",
                    "properties": {
                        "capabilityId": {"type": "string", "description": "The observation's capabilityId, e.g. view:devices.table.readState."},
                        "instanceId": {"type": "string", "description": "The instance, when several are listed."}
                    },
                    "required": ["capabilityId"],
                    "additionalProperties": false
                }),
            },
            MetaTool {
                name: ACT,
                description: "Run an action or backend procedure listed by surface_discover with an input matching its inputSchema. Follow the result's retry hint; after CONFIRMATION_REQUIRED, retry with the confirmationId once the user approved.",
                schema: json!({
                    "type": "object",
                    "properties": {
                        "capabilityId": {"type": "string", "description": "The action's capabilityId or the procedure's procedureId."},
                        "instanceId": {"type": "string", "description": "The instance, when several are listed."},
                        "registrationId": {"type": "string", "description": "The registrationId from surface_discover."},
                        "input": {"type": "object", "description": "The input, matching the target's inputSchema."},
                        "invocationId": {"type": "string", "description": "Reuse it only to retry the same call."},
                        "confirmationId": {"type": "string", "description": "Evidence from an approved confirmation."},
                        "surfaceVersion": {"type": "string", "description": "The surfaceVersion from surface_discover."}
                    },
                    "required": ["capabilityId"],
                    "additionalProperties": false
                }),
            },
        ]
    })
}

fn meta_tools() -> &'static Arc<Vec<Tool>> {
    static TOOLS: std::sync::OnceLock<Arc<Vec<Tool>>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| {
        Arc::new(
            meta_definitions()
                .iter()
                .map(|meta| Tool {
                    source: Source::Meta(meta),
                    renamed: None,
                    state: ToolState {
                        available: true,
                        unavailable_reason: None,
                        note: None,
                    },
                    surface_version: 0,
                })
                .collect(),
        )
    })
}

/// An envelope's fields after validation.
struct Envelope(Map<String, Value>);

impl Envelope {
    /// Checks the top-level keys and their types: unknown or mistyped keys
    /// and missing required ones are `INVALID_INPUT` naming them, capped,
    /// truncated and cleaned as the validator's issues are.
    fn check(
        input: Value,
        strings: &[&str],
        required: &[&str],
        other: &[&str],
    ) -> Result<Envelope, ErrorPayload> {
        let map = match input {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            _ => {
                return Err(ErrorPayload::invalid_input(&[Issue::new(
                    "",
                    "the arguments must be a JSON object",
                )]));
            }
        };
        let mut issues = Issues::default();
        let mut allowed: Vec<&str> = strings.iter().chain(other).copied().collect();
        allowed.sort_unstable();
        let unknown = format!("unknown key; the keys are: {}", allowed.join(", "));
        // Missing keys first: they stay listed however many unknown ones follow.
        for key in required {
            if !map.contains_key(*key) {
                issues.push_issue(Issue::new(key_pointer(key), "is required"));
            }
        }
        for (key, value) in &map {
            if strings.contains(&key.as_str()) {
                if !value.is_string() {
                    issues.push_issue(Issue::new(key_pointer(key), "must be a string"));
                }
            } else if !other.contains(&key.as_str()) {
                issues.push_issue(Issue::new(key_pointer(key), unknown.clone()));
            }
        }
        if issues.is_empty() {
            Ok(Envelope(map))
        } else {
            Err(ErrorPayload::invalid_input(&issues.finish()))
        }
    }

    fn string(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }
}

/// A model-supplied scope intersected with the configured floor.
struct Scoped {
    prefixes: Vec<String>,
    rejected: Vec<String>,
    empty: bool,
}

/// The most prefixes a model may request in `surface_discover`'s `scope`.
const MAX_SCOPE_PREFIXES: usize = 32;

fn narrow(floor: &[String], requested: Option<Vec<String>>) -> Scoped {
    let Some(requested) = requested else {
        return Scoped {
            prefixes: floor.to_vec(),
            rejected: Vec::new(),
            empty: false,
        };
    };
    if requested.is_empty() {
        return Scoped {
            prefixes: floor.to_vec(),
            rejected: Vec::new(),
            empty: false,
        };
    }
    if floor.is_empty() {
        return Scoped {
            prefixes: requested,
            rejected: Vec::new(),
            empty: false,
        };
    }
    let mut prefixes = Vec::new();
    let mut rejected = Vec::new();
    for prefix in requested {
        if in_scope(&prefix, floor) {
            // Within the floor: narrows it.
            prefixes.push(prefix);
            continue;
        }
        // Wider than some floor prefixes: only those stay.
        let inner: Vec<&String> = floor
            .iter()
            .filter(|f| in_scope(f, std::slice::from_ref(&prefix)))
            .collect();
        if inner.is_empty() {
            rejected.push(prefix);
        } else {
            prefixes.extend(inner.into_iter().cloned());
        }
    }
    prefixes.sort();
    prefixes.dedup();
    let empty = prefixes.is_empty();
    Scoped {
        prefixes,
        rejected,
        empty,
    }
}

impl Toolset {
    fn ok(&self, name: &str, tool_call_id: Option<&str>, output: Value) -> InvocationResult {
        self.shared
            .settled(name, tool_call_id, Ok(Some(Arc::new(output))))
    }

    fn discover(&self, input: Value, tool_call_id: Option<&str>) -> InvocationResult {
        let shared = &self.shared;
        let envelope = match Envelope::check(input, &[], &[], &["scope"]) {
            Ok(envelope) => envelope,
            Err(error) => return shared.immediate(DISCOVER, tool_call_id, error),
        };
        let requested = match envelope.0.get("scope") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let strings: Option<Vec<String>> = items
                    .iter()
                    .map(|item| item.as_str().map(str::to_owned))
                    .collect();
                match strings {
                    Some(strings) => {
                        // Bounded: the rejected prefixes are echoed back.
                        let max_bytes = shared.registry.limits().max_id_bytes;
                        let issue = if strings.len() > MAX_SCOPE_PREFIXES {
                            Some(Issue::new(
                                "/scope",
                                format!("must list at most {MAX_SCOPE_PREFIXES} prefixes"),
                            ))
                        } else {
                            strings.iter().position(|p| p.len() > max_bytes).map(|at| {
                                Issue::new(
                                    format!("/scope/{at}"),
                                    format!("must be at most {max_bytes} bytes long"),
                                )
                            })
                        };
                        if let Some(issue) = issue {
                            return shared.immediate(
                                DISCOVER,
                                tool_call_id,
                                ErrorPayload::invalid_input(&[issue]),
                            );
                        }
                        Some(strings)
                    }
                    None => {
                        return shared.immediate(
                            DISCOVER,
                            tool_call_id,
                            ErrorPayload::invalid_input(&[Issue::new(
                                "/scope",
                                "must be an array of strings",
                            )]),
                        );
                    }
                }
            }
            Some(_) => {
                return shared.immediate(
                    DISCOVER,
                    tool_call_id,
                    ErrorPayload::invalid_input(&[Issue::new(
                        "/scope",
                        "must be an array of strings",
                    )]),
                );
            }
        };
        let scoped = narrow(&shared.options.scope, requested);
        let mut output = if scoped.empty {
            json!({
                "surfaceId": shared.registry.surface_id(),
                "surfaceVersion": shared.registry.version().to_string(),
                "capturedAt": crate::clock::rfc3339(shared.registry.now_ms()),
                "components": [],
                "procedures": [],
            })
        } else {
            let options = SnapshotOptions {
                consumer: shared.options.consumer.clone(),
                scope: scoped.prefixes,
                include_unavailable: true,
                budget: shared.budget,
            };
            shared.registry.snapshot(&options).to_json()
        };
        if !scoped.rejected.is_empty()
            && let Value::Object(map) = &mut output
        {
            map.insert(
                "scopeRejected".to_owned(),
                json!({"prefixes": scoped.rejected}),
            );
        }
        self.ok(DISCOVER, tool_call_id, output)
    }

    async fn read(
        &self,
        input: Value,
        tool_call_id: Option<&str>,
        cancellation: Option<CancellationToken>,
    ) -> InvocationResult {
        let shared = &self.shared;
        let envelope = match Envelope::check(
            input,
            &["capabilityId", "instanceId"],
            &["capabilityId"],
            &[],
        ) {
            Ok(envelope) => envelope,
            Err(error) => return shared.immediate(READ, tool_call_id, error),
        };
        let mut request = Invocation::new(envelope.string("capabilityId").unwrap_or_default());
        if let Some(instance) = envelope.string("instanceId") {
            request = request.instance(instance);
        }
        request.registration_id = self.known_registration(&request);
        request.invocation_id = tool_call_id.map(str::to_owned);
        shared.run(request, Kinds::Observations, cancellation).await
    }

    async fn act(
        &self,
        input: Value,
        tool_call_id: Option<&str>,
        cancellation: Option<CancellationToken>,
    ) -> InvocationResult {
        let shared = &self.shared;
        let strings = [
            "capabilityId",
            "instanceId",
            "registrationId",
            "invocationId",
            "confirmationId",
            "surfaceVersion",
        ];
        let mut envelope = match Envelope::check(input, &strings, &["capabilityId"], &["input"]) {
            Ok(envelope) => envelope,
            Err(error) => return shared.immediate(ACT, tool_call_id, error),
        };
        let capability_id = envelope
            .string("capabilityId")
            .unwrap_or_default()
            .to_owned();
        let mut payload = envelope.0.remove("input").unwrap_or(Value::Null);
        // Some models send the input object JSON-encoded: repaired only when
        // the target's schema is an object (every action and procedure
        // input is), so a string the target declares stays a string.
        if let Value::String(text) = &payload
            && self.takes_object(&capability_id)
            && let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(text)
        {
            payload = parsed;
        }
        let mut request = Invocation::new(capability_id).input(payload);
        if let Some(instance) = envelope.string("instanceId") {
            request = request.instance(instance);
        }
        request.registration_id = envelope
            .string("registrationId")
            .map(str::to_owned)
            .or_else(|| self.known_registration(&request));
        request.surface_version = envelope.string("surfaceVersion").map(str::to_owned);
        request.confirmation_id = envelope.string("confirmationId").map(str::to_owned);
        request.invocation_id = envelope
            .string("invocationId")
            .or(tool_call_id)
            .map(str::to_owned);
        shared.run(request, Kinds::Operations, cancellation).await
    }

    /// Whether the target's input schema is an object schema (true for
    /// every action and procedure; observations take none).
    fn takes_object(&self, capability_id: &str) -> bool {
        capability_id.starts_with("view:") || capability_id.starts_with("domain:")
    }

    /// The registration of `(capability, instance)` in this consumer's
    /// current surface, when exactly one matches: meta calls carry the same
    /// staleness token as direct ones.
    fn known_registration(&self, request: &Invocation) -> Option<String> {
        let catalog = self.shared.catalog();
        let mut matches = catalog.tools.iter().filter_map(|tool| {
            let target = tool.target()?;
            (target.capability_id == request.capability_id.as_str()
                && request
                    .instance_id
                    .as_deref()
                    .is_none_or(|i| target.instance_id == i))
            .then(|| target.registration_id.to_owned())
        });
        match (matches.next(), matches.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }
}

/// The size of the meta-mode tool block in canonical JSON bytes.
pub fn meta_block_size() -> usize {
    struct Count(usize);
    impl Sink for Count {
        fn write(&mut self, bytes: &[u8]) {
            self.0 += bytes.len();
        }
    }
    let mut count = Count(0);
    for tool in meta_tools().iter() {
        write_canonical(&tool.definition(), &mut count);
    }
    count.0
}
