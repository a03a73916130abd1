//! The registry: the single source of truth for what agents can reach.
//!
//! Mount a component (an `Arc` of a type with an `#[agent_component]` impl)
//! and keep the returned [`Mounted`] guard; dropping it unmounts. The
//! registry versions every surface mutation, serves per-consumer snapshots,
//! and runs every invocation through the ten-phase pipeline.
//!
//! # Example
//! ```
//! use agent_surface::prelude::*;
//! use agent_surface::registry::Registry;
//! use std::sync::Arc;
//!
//! /// A counter.
//! #[agent_component(type = "demo.counter")]
//! impl Counter {
//!     /// The current value.
//!     #[observation]
//!     fn value(&self) -> u64 {
//!         self.0.load(std::sync::atomic::Ordering::Relaxed)
//!     }
//! }
//! struct Counter(std::sync::atomic::AtomicU64);
//!
//! let registry = Registry::builder().build();
//! let mounted = registry.mount(Arc::new(Counter(7.into())))?;
//! assert_eq!(registry.version(), 1);
//! let snapshot = registry.snapshot(&Default::default());
//! assert_eq!(snapshot.components().len(), 1);
//! drop(mounted); // unmounts
//! assert_eq!(registry.version(), 2);
//! # Ok::<(), agent_surface::registry::MountError>(())
//! ```

mod registration;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub(crate) use registration::{
    Availability, Chain, Chains, NOT_AVAILABLE_NOW, Override, Registration, WHEN_ERROR, vote,
};

use crate::audit::{
    self, AuditEvent, AuditKind, AuditSink, ConsoleAuditSink, FanOut, MemoryAuditSink,
};
use crate::clock::{Clock, TokioClock};
use crate::component::Component;
use crate::confirmation::ConfirmationStore;
use crate::context::{Environment, HostContext};
use crate::contract::CheckedContract;
use crate::error::DefinitionError;
use crate::events::{Dispatcher, Listener, Subscription, SurfaceEvent};
use crate::ids::{CapabilityId, InstanceId};
use crate::invoke::concurrency::Admission;
use crate::invoke::dedupe::Dedupe;
use crate::policy::PolicyRef;
use crate::procedure::{
    ErasedRef, ManifestMismatch, Procedure, ProcedureError, ProcedureExecutor, ProcedureRef,
    Reference,
};
use crate::schema::SchemaLimits;
use crate::util::ids::IdMint;
use crate::util::lru::Lru;

/// Every limit of the registry, with the specification's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Component descriptions, in characters (500).
    pub max_component_description: usize,
    /// Capability descriptions, in characters (300).
    pub max_capability_description: usize,
    /// Serialized agent-visible metadata, in bytes (2048).
    pub max_meta_bytes: usize,
    /// Serialized handler output, in bytes (32 768).
    pub max_output_bytes: usize,
    /// Serialized schema, in bytes (16 384).
    pub max_schema_bytes: usize,
    /// Schema nesting depth (8).
    pub max_schema_depth: usize,
    /// Observation timeout (5 s).
    pub observation_timeout: Duration,
    /// Action timeout (10 s).
    pub action_timeout: Duration,
    /// Procedure timeout (30 s).
    pub procedure_timeout: Duration,
    /// Waiting actions per queue beyond the running one (2).
    pub action_queue_depth: usize,
    /// Concurrent observations per consumer (8).
    pub max_concurrent_observations_per_consumer: usize,
    /// Concurrent observations overall (32).
    pub max_concurrent_observations_total: usize,
    /// Waiting observations per consumer (8).
    pub max_queued_observations_per_consumer: usize,
    /// Terminal results kept for deduplication (200).
    pub dedupe_cache_size: usize,
    /// How long deduplication remembers a result (10 min).
    pub dedupe_cache_ttl: Duration,
    /// Unmounted registrations remembered (100).
    pub tombstone_size: usize,
    /// How long an unmounted registration is remembered (5 min).
    pub tombstone_ttl: Duration,
    /// How long a confirmation waits for the user (120 s).
    pub confirmation_ttl: Duration,
    /// Confirmations pending at once (32).
    pub max_pending_confirmations: usize,
    /// Audit events kept by the default in-memory sink (1000).
    pub audit_buffer: usize,
    /// Largest input or output kept in a `full` audit record, in bytes (4096).
    pub max_audit_payload_bytes: usize,
    /// Longest agent-supplied identifier (invocation, capability, instance,
    /// registration, confirmation ids and the version hint), in bytes (256).
    /// Longer ones settle `INVALID_INPUT` before anything is remembered.
    pub max_id_bytes: usize,
    /// Largest agent input, serialized, in bytes (262 144).
    pub max_input_bytes: usize,
    /// Deepest nesting of agent input (arrays and objects), checked
    /// iteratively before any recursive walk (64).
    pub max_input_depth: usize,
    /// Confirmations one consumer may have pending at once, under
    /// `max_pending_confirmations` (8), so one consumer cannot starve others.
    pub max_pending_confirmations_per_consumer: usize,
    /// Bytes of terminal results kept for deduplication, all consumers
    /// together (4 MiB). When full, the consumer holding the most gives up
    /// its oldest record first.
    pub dedupe_cache_bytes: usize,
    /// Calls one consumer may have in flight under an invocation id at once
    /// (64); more settle `RATE_LIMITED`. In-flight records are never evicted.
    pub max_in_flight_per_consumer: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_component_description: agent_surface_rules::MAX_COMPONENT_DESCRIPTION,
            max_capability_description: agent_surface_rules::MAX_CAPABILITY_DESCRIPTION,
            max_meta_bytes: agent_surface_rules::MAX_META_BYTES,
            max_output_bytes: 32_768,
            max_schema_bytes: 16_384,
            max_schema_depth: 8,
            observation_timeout: Duration::from_secs(5),
            action_timeout: Duration::from_secs(10),
            procedure_timeout: Duration::from_secs(30),
            action_queue_depth: 2,
            max_concurrent_observations_per_consumer: 8,
            max_concurrent_observations_total: 32,
            max_queued_observations_per_consumer: 8,
            dedupe_cache_size: 200,
            dedupe_cache_ttl: Duration::from_secs(600),
            tombstone_size: 100,
            tombstone_ttl: Duration::from_secs(300),
            confirmation_ttl: Duration::from_secs(120),
            max_pending_confirmations: 32,
            audit_buffer: 1000,
            max_audit_payload_bytes: 4096,
            max_id_bytes: 256,
            max_input_bytes: 262_144,
            max_input_depth: 64,
            max_pending_confirmations_per_consumer: 8,
            dedupe_cache_bytes: 4 << 20,
            max_in_flight_per_consumer: 64,
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// What to do when a component is mounted under a `(type, instance)` that
/// is already live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DuplicatePolicy {
    /// The newcomer gets a dead handle and a `component-rejected` event (default).
    #[default]
    Reject,
    /// The live registration is unmounted (its invocations settle
    /// `COMPONENT_UNMOUNTED`) and the newcomer takes its place.
    Replace,
}

/// What to do when `view:X.Y` is mounted while `domain:X.Y` is a known procedure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SuffixPolicy {
    /// Nothing.
    Off,
    /// A `collision-suspected` event and a warning (default).
    #[default]
    Warn,
    /// Refuse the mount.
    Error,
}

/// What a registration guard sees.
#[derive(Clone, Debug)]
pub struct RegistrationCandidate<'a> {
    /// The component type.
    pub component_type: &'a str,
    /// The instance.
    pub instance_id: &'a str,
    /// The registrant's trust label.
    pub origin: &'a str,
    /// Every capability it would expose.
    pub capabilities: Vec<&'a CapabilityId>,
}

/// A registration guard's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardDecision {
    /// Mount it.
    Accept,
    /// Refuse it (dead handle + `component-rejected {reason: "guard"}`).
    Reject,
}

/// The route a snapshot reports (the host wires its router here).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RouteInfo {
    /// The current path.
    pub path: String,
    /// Route parameters.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub params: std::collections::BTreeMap<String, String>,
}

type HostProvider = Arc<dyn Fn() -> HostContext + Send + Sync>;
type Guard = Arc<dyn Fn(&RegistrationCandidate<'_>) -> GuardDecision + Send + Sync>;
type RouteProvider = Arc<dyn Fn() -> Option<RouteInfo> + Send + Sync>;
type Redactor = Arc<dyn Fn(&serde_json::Value) -> serde_json::Value + Send + Sync>;
type ErrorHook = Arc<dyn Fn(&str, &ProcedureError) -> Option<crate::ErrorPayload> + Send + Sync>;

/// Builds a [`Registry`].
#[must_use]
pub struct RegistryBuilder {
    environment: Environment,
    host: Option<HostProvider>,
    policies: Vec<PolicyRef>,
    audit: Option<Arc<dyn AuditSink>>,
    guard: Option<Guard>,
    duplicates: DuplicatePolicy,
    suffixes: SuffixPolicy,
    route: Option<RouteProvider>,
    limits: Limits,
    clock: Option<Arc<dyn Clock>>,
    redact: Option<Redactor>,
    procedure_errors: Option<ErrorHook>,
}

impl fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryBuilder")
            .field("environment", &self.environment)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl RegistryBuilder {
    /// `development`, `production` (default) or `test`.
    pub fn environment(mut self, environment: Environment) -> Self {
        self.environment = environment;
        self
    }

    /// The host context provider, called lazily per evaluation. Keep it
    /// synchronous and cheap (read from your stores, never fetch). A panic
    /// is contained and fails closed: that evaluation sees an empty context
    /// (no user, no permissions).
    pub fn host_context(
        mut self,
        provider: impl Fn() -> HostContext + Send + Sync + 'static,
    ) -> Self {
        self.host = Some(Arc::new(provider));
        self
    }

    /// Adds a registry-wide policy (outermost layer of every chain).
    pub fn policy(mut self, policy: impl crate::policy::Policy) -> Self {
        self.policies.push(Arc::new(policy));
        self
    }

    /// Replaces the default audit sink (bounded memory, plus stderr in development).
    pub fn audit_sink(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(sink);
        self
    }

    /// Transforms inputs and outputs before they enter `full` audit records.
    pub fn audit_redaction(
        mut self,
        redact: impl Fn(&serde_json::Value) -> serde_json::Value + Send + Sync + 'static,
    ) -> Self {
        self.redact = Some(Arc::new(redact));
        self
    }

    /// A guard consulted before accepting each mount (trust filtering).
    pub fn on_register(
        mut self,
        guard: impl Fn(&RegistrationCandidate<'_>) -> GuardDecision + Send + Sync + 'static,
    ) -> Self {
        self.guard = Some(Arc::new(guard));
        self
    }

    /// Collision handling for a duplicate `(type, instance)`.
    pub fn duplicate_instances(mut self, policy: DuplicatePolicy) -> Self {
        self.duplicates = policy;
        self
    }

    /// Suffix-collision diagnostics against known domain procedure ids.
    pub fn suffix_collisions(mut self, policy: SuffixPolicy) -> Self {
        self.suffixes = policy;
        self
    }

    /// The route provider for snapshots (a panic is contained: no route).
    pub fn route(
        mut self,
        provider: impl Fn() -> Option<RouteInfo> + Send + Sync + 'static,
    ) -> Self {
        self.route = Some(Arc::new(provider));
        self
    }

    /// Every limit at once.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The clock for timestamps, TTLs and rate limits (default: wall time
    /// that advances with tokio's clock, so `tokio::time::pause()` controls it).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Maps backend errors of domain procedures to agent-facing errors
    /// (e.g. a backend `forbidden` to `NOT_AUTHORIZED {origin: "server"}`).
    /// Errors the hook leaves unmapped (`None`) settle
    /// `EXECUTION_FAILED {reason: "transport"}` with a fixed message; the
    /// backend's own text only reaches the audit trail.
    ///
    /// ```
    /// use agent_surface::procedure::ProcedureError;
    /// use agent_surface::{ErrorPayload, Registry};
    ///
    /// let registry = Registry::builder()
    ///     .procedure_errors(|_procedure, error| match error.code() {
    ///         Some("forbidden") => Some(ErrorPayload::not_authorized("server")),
    ///         _ => None,
    ///     })
    ///     .build();
    /// # let _ = registry;
    /// ```
    pub fn procedure_errors(
        mut self,
        map: impl Fn(&str, &ProcedureError) -> Option<crate::ErrorPayload> + Send + Sync + 'static,
    ) -> Self {
        self.procedure_errors = Some(Arc::new(map));
        self
    }

    /// Builds the registry.
    pub fn build(self) -> Registry {
        let ids = IdMint::new();
        let memory = Arc::new(MemoryAuditSink::new(self.limits.audit_buffer));
        let audit: Arc<dyn AuditSink> = match (self.audit, self.environment) {
            (Some(sink), _) => sink,
            (None, Environment::Development) => Arc::new(FanOut(vec![
                Arc::clone(&memory) as Arc<dyn AuditSink>,
                Arc::new(ConsoleAuditSink),
            ])),
            (None, _) => Arc::clone(&memory) as Arc<dyn AuditSink>,
        };
        let limits = self.limits;
        let clock = self.clock.unwrap_or_else(|| Arc::new(TokioClock::new()));
        let base_chain = if self.policies.is_empty() {
            Arc::clone(shared_defaults().empty_chain())
        } else {
            Arc::new(Chain::compose(&self.policies, &[], Vec::new()))
        };
        let inner = Inner {
            surface_id: Arc::from(ids.surface_id()),
            config: Config {
                environment: self.environment,
                host: self.host,
                policies: self.policies,
                guard: self.guard,
                duplicates: self.duplicates,
                suffixes: self.suffixes,
                route: self.route,
                limits,
                redact: self.redact,
                procedure_errors: self.procedure_errors,
            },
            clock,
            ids,
            state: Mutex::new(State {
                version: 0,
                live: FxHashMap::default(),
                by_type: FxHashMap::default(),
                ordered: None,
                tombstones: Lru::new(limits.tombstone_size, millis(limits.tombstone_ttl)),
                unmounted_types: Lru::new(limits.tombstone_size, millis(limits.tombstone_ttl)),
                known_procedures: Vec::new(),
                by_procedure: FxHashMap::default(),
            }),
            executor: std::sync::RwLock::new(None),
            dispatcher: Arc::new(Dispatcher::default()),
            audit,
            memory_audit: memory,
            dedupe: Mutex::new(Dedupe::new(crate::invoke::dedupe::Budget {
                count: limits.dedupe_cache_size,
                bytes: limits.dedupe_cache_bytes,
                ttl_ms: millis(limits.dedupe_cache_ttl),
                in_flight_per_consumer: limits.max_in_flight_per_consumer.max(1),
            })),
            confirmations: ConfirmationStore::new(limits.max_pending_confirmations),
            admission: Arc::new(Admission::default()),
            disposed: CancellationToken::new(),
            version_tx: std::sync::OnceLock::new(),
            version: std::sync::atomic::AtomicU64::new(0),
            empty_host: shared_defaults().host.clone(),
            anonymous: shared_defaults().anonymous.clone(),
            base_chain,
        };
        Registry {
            inner: Arc::new(inner),
        }
    }
}

pub(crate) struct Config {
    pub(crate) environment: Environment,
    pub(crate) host: Option<HostProvider>,
    pub(crate) policies: Vec<PolicyRef>,
    pub(crate) guard: Option<Guard>,
    pub(crate) duplicates: DuplicatePolicy,
    pub(crate) suffixes: SuffixPolicy,
    pub(crate) route: Option<RouteProvider>,
    pub(crate) limits: Limits,
    pub(crate) redact: Option<Redactor>,
    pub(crate) procedure_errors: Option<ErrorHook>,
}

/// Immutable values every registry starts with, built once per process.
struct SharedDefaults {
    host: HostContext,
    anonymous: crate::context::Consumer,
    empty_chain: std::sync::OnceLock<Arc<Chain>>,
}

impl SharedDefaults {
    fn empty_chain(&self) -> &Arc<Chain> {
        self.empty_chain
            .get_or_init(|| Arc::new(Chain::compose(&[], &[], Vec::new())))
    }
}

fn shared_defaults() -> &'static SharedDefaults {
    static DEFAULTS: std::sync::OnceLock<SharedDefaults> = std::sync::OnceLock::new();
    DEFAULTS.get_or_init(|| SharedDefaults {
        host: HostContext::default(),
        anonymous: crate::context::Consumer::anonymous(),
        empty_chain: std::sync::OnceLock::new(),
    })
}

/// What is kept after an unmount: the released registration — its
/// identity, contract and policy chains, so a tombstone answers each
/// consumer exactly as the live registration did (hidden stays hidden).
/// Its handlers and closures are gone (taken out at unmount).
#[derive(Clone, Debug)]
pub(crate) struct Tombstone {
    pub(crate) registration: Arc<Registration>,
}

impl Tombstone {
    /// The instance it had.
    pub(crate) fn instance(&self) -> &InstanceId {
        &self.registration.instance
    }

    /// Whether it exposed procedure `id` when it was unmounted.
    pub(crate) fn exposed(&self, id: &str) -> bool {
        self.registration
            .references
            .iter()
            .any(|reference| reference.is_exposed() && &**reference.id() == id)
    }
}

/// Snapshot order: priority descending, then type, then instance.
fn snapshot_order(a: &Registration, b: &Registration) -> std::cmp::Ordering {
    b.contract
        .priority()
        .cmp(&a.contract.priority())
        .then_with(|| a.contract.component_type().cmp(b.contract.component_type()))
        .then_with(|| a.instance.cmp(&b.instance))
}

pub(crate) struct State {
    pub(crate) version: u64,
    pub(crate) live: FxHashMap<Arc<str>, Arc<Registration>>,
    /// Live registrations per component type, by instance (deterministic order).
    pub(crate) by_type: FxHashMap<Arc<str>, BTreeMap<InstanceId, Arc<Registration>>>,
    /// Live registrations in snapshot order, rebuilt lazily after mutations.
    ordered: Option<Arc<Vec<Arc<Registration>>>>,
    pub(crate) tombstones: Lru<Arc<str>, Tombstone>,
    /// Component types of recent unmounts (→ registration id), for calls
    /// without a registration id.
    pub(crate) unmounted_types: Lru<Arc<str>, Arc<str>>,
    pub(crate) known_procedures: Vec<Arc<str>>,
    /// Live registrations exposing each procedure, in mount order.
    pub(crate) by_procedure: FxHashMap<Arc<str>, Vec<Arc<Registration>>>,
}

impl State {
    /// Live registrations sorted by (priority desc, type, instance).
    pub(crate) fn ordered(&mut self) -> Arc<Vec<Arc<Registration>>> {
        if let Some(ordered) = &self.ordered {
            return Arc::clone(ordered);
        }
        let mut all: Vec<Arc<Registration>> = self.live.values().cloned().collect();
        all.sort_by(|a, b| snapshot_order(a, b));
        let all = Arc::new(all);
        self.ordered = Some(Arc::clone(&all));
        all
    }

    fn insert(&mut self, registration: &Arc<Registration>) {
        self.live
            .insert(Arc::clone(&registration.id), Arc::clone(registration));
        self.by_type
            .entry(Arc::clone(registration.contract.component_type().as_arc()))
            .or_default()
            .insert(registration.instance.clone(), Arc::clone(registration));
        for reference in registration.references.iter() {
            if reference.is_exposed() {
                let holders = self
                    .by_procedure
                    .entry(Arc::clone(reference.id()))
                    .or_default();
                holders.push(Arc::clone(registration));
                holders.sort_by(|a, b| snapshot_order(a, b));
            }
        }
        self.ordered = None;
    }

    /// Rebuilds the procedure index (after the manifest changed).
    fn index_procedures(&mut self) {
        self.by_procedure.clear();
        let mut live: Vec<&Arc<Registration>> = self.live.values().collect();
        live.sort_by(|a, b| snapshot_order(a, b));
        for registration in live {
            for reference in registration.references.iter() {
                if reference.is_exposed() {
                    self.by_procedure
                        .entry(Arc::clone(reference.id()))
                        .or_default()
                        .push(Arc::clone(registration));
                }
            }
        }
    }

    fn remove(&mut self, registration: &Arc<Registration>, now_ms: u64) {
        self.live.remove(&registration.id);
        let component_type = registration.contract.component_type().as_str();
        if let Some(instances) = self.by_type.get_mut(component_type) {
            if instances
                .get(&registration.instance)
                .is_some_and(|live| Arc::ptr_eq(live, registration))
            {
                instances.remove(&registration.instance);
            }
            if instances.is_empty() {
                self.by_type.remove(component_type);
            }
        }
        for reference in registration.references.iter() {
            if let Some(holders) = self.by_procedure.get_mut(&**reference.id()) {
                holders.retain(|holder| !Arc::ptr_eq(holder, registration));
                if holders.is_empty() {
                    self.by_procedure.remove(&**reference.id());
                }
            }
        }
        self.unmounted_types.insert(
            Arc::clone(registration.contract.component_type().as_arc()),
            Arc::clone(&registration.id),
            now_ms,
        );
        self.tombstones.insert(
            Arc::clone(&registration.id),
            Tombstone {
                registration: Arc::clone(registration),
            },
            now_ms,
        );
        self.ordered = None;
    }
}

pub(crate) struct Inner {
    pub(crate) surface_id: Arc<str>,
    pub(crate) config: Config,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: IdMint,
    pub(crate) state: Mutex<State>,
    pub(crate) dispatcher: Arc<Dispatcher>,
    pub(crate) audit: Arc<dyn AuditSink>,
    pub(crate) memory_audit: Arc<MemoryAuditSink>,
    pub(crate) dedupe: Mutex<Dedupe>,
    pub(crate) confirmations: ConfirmationStore,
    pub(crate) admission: Arc<Admission>,
    /// Fired by `dispose()`.
    pub(crate) disposed: CancellationToken,
    /// Created by the first `watch_version`.
    pub(crate) version_tx: std::sync::OnceLock<watch::Sender<u64>>,
    /// The version, readable without the state lock (written under it).
    pub(crate) version: std::sync::atomic::AtomicU64,
    /// The host context used when no provider is configured.
    pub(crate) empty_host: HostContext,
    /// The consumer of calls that name none.
    pub(crate) anonymous: crate::context::Consumer,
    /// The registry's own policy chain, shared by registrations that add none.
    pub(crate) base_chain: Arc<Chain>,
    /// The installed procedure executor.
    pub(crate) executor: std::sync::RwLock<Option<Arc<dyn ProcedureExecutor>>>,
}

impl Inner {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The installed procedure executor.
    pub(crate) fn executor(&self) -> Option<Arc<dyn ProcedureExecutor>> {
        self.executor
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn host(&self) -> HostContext {
        match &self.config.host {
            // A panicking provider fails closed: an empty host context (no
            // user, no permissions).
            Some(provider) => {
                crate::util::contain::contained("host context provider", || provider())
                    .unwrap_or_else(|| self.empty_host.clone())
            }
            None => self.empty_host.clone(),
        }
    }

    /// The policy context of one capability of a registration, for a consumer.
    pub(crate) fn policy_context<'a>(
        &'a self,
        registration: &'a Registration,
        capability: &'a crate::contract::CheckedCapability,
        consumer: &'a crate::context::Consumer,
        host: &'a HostContext,
    ) -> crate::policy::PolicyContext<'a> {
        crate::policy::PolicyContext {
            capability_id: capability.id(),
            kind: capability.kind(),
            effect: capability.effect(),
            registration_id: &registration.id,
            consumer,
            host,
            environment: self.config.environment,
            component_meta: registration.contract.meta().map(|m| &**m),
            capability_meta: capability.meta().map(|m| &**m),
            component_internal: registration.contract.internal(),
            capability_internal: capability.internal(),
            clock: self.clock.as_ref(),
        }
    }

    /// The current version, without taking the state lock.
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub(crate) fn record(&self, event: &AuditEvent) {
        audit::record(self.audit.as_ref(), event);
    }

    /// Bumps the version under the state lock and queues `surface-changed`.
    pub(crate) fn bump(&self, state: &mut State, mut events: Vec<SurfaceEvent>) {
        state.version += 1;
        let version = state.version;
        self.version.store(version, Ordering::Release);
        // Watchers are rare; without any, skip the notification machinery
        // (`watch_version` syncs the value when someone subscribes).
        if let Some(sender) = self.version_tx.get().filter(|s| s.receiver_count() > 0) {
            sender.send_replace(version);
        }
        if self.dispatcher.active() {
            events.push(SurfaceEvent::SurfaceChanged {
                surface_version: version.to_string(),
            });
            self.dispatcher.enqueue(events);
        }
    }

    pub(crate) fn schema_limits(&self) -> SchemaLimits {
        SchemaLimits {
            max_bytes: self.config.limits.max_schema_bytes,
            max_depth: self.config.limits.max_schema_depth,
        }
    }
}

/// Why a mount failed. Runtime conditions (duplicates, guard refusals) do
/// not fail: they return a rejected [`Mounted`] handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountError {
    /// A structural defect of the contract or the instance id; raised in
    /// every environment.
    Definition(DefinitionError),
    /// The registry was disposed.
    Disposed,
    /// A procedure reference disagrees with the installed executor's
    /// manifest (id, description, schemas, effect or confirmation posture).
    Manifest(ManifestMismatch),
    /// The suffix-collision policy is `error` and the mount collides.
    SuffixCollision {
        /// The view capability.
        view: String,
        /// The domain procedure it collides with.
        domain: String,
    },
}

impl fmt::Display for MountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MountError::Definition(err) => err.fmt(f),
            MountError::Disposed => f.write_str("the registry was disposed"),
            MountError::Manifest(mismatch) => mismatch.fmt(f),
            MountError::SuffixCollision { view, domain } => {
                write!(f, "`{view}` collides with the domain procedure `{domain}`")
            }
        }
    }
}

impl std::error::Error for MountError {}

impl From<DefinitionError> for MountError {
    fn from(err: DefinitionError) -> Self {
        MountError::Definition(err)
    }
}

/// The state of a registration handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RegistrationStatus {
    /// Mounted and visible.
    Active,
    /// Refused (duplicate instance or registration guard).
    Rejected,
    /// Unmounted.
    Unregistered,
}

/// The handle of one mount. Dropping it (or calling
/// [`unmount`](Mounted::unmount)) unmounts the component.
#[must_use = "dropping the handle unmounts the component at once"]
pub struct Mounted {
    registry: Registry,
    registration_id: Arc<str>,
    registration: Option<Arc<Registration>>,
}

impl fmt::Debug for Mounted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mounted")
            .field("registration_id", &self.registration_id)
            .field("status", &self.status())
            .finish()
    }
}

impl Mounted {
    /// The registration id (`reg_…`), the staleness token agents send back.
    pub fn registration_id(&self) -> &str {
        &self.registration_id
    }

    /// Active, rejected or unregistered.
    pub fn status(&self) -> RegistrationStatus {
        match &self.registration {
            None => RegistrationStatus::Rejected,
            Some(registration) if registration.is_active() => RegistrationStatus::Active,
            Some(_) => RegistrationStatus::Unregistered,
        }
    }

    fn live(&self) -> Option<&Arc<Registration>> {
        let live = self.registration.as_ref().filter(|r| r.is_active());
        if live.is_none() && self.registry.inner.config.environment == Environment::Development {
            tracing::warn!(registration = %self.registration_id, "update on a handle that is not active is ignored");
        }
        live
    }

    /// The master switch: `false` shows every capability as unavailable
    /// (reason `component-disabled`). Bumps the version when it changes.
    pub fn set_enabled(&self, enabled: bool) {
        let Some(registration) = self.live() else {
            return;
        };
        let inner = &self.registry.inner;
        let mut state = inner.state();
        if !registration.is_active()
            || registration.enabled.swap(enabled, Ordering::AcqRel) == enabled
        {
            return;
        }
        let events = if inner.dispatcher.active() {
            registration
                .contract
                .capabilities()
                .iter()
                .map(|capability| SurfaceEvent::AvailabilityChanged {
                    registration_id: Arc::clone(&registration.id),
                    capability_id: Arc::clone(capability.id().as_arc()),
                    available: enabled,
                })
                .collect()
        } else {
            Vec::new()
        };
        inner.bump(&mut state, events);
        drop(state);
        inner.dispatcher.drain();
    }

    /// Pushes an availability override for one capability (by name);
    /// `None` removes it. Bumps the version when it changes.
    pub fn set_availability(
        &self,
        capability: &str,
        availability: Option<(bool, Option<&str>)>,
    ) -> bool {
        let Some(registration) = self.live() else {
            return false;
        };
        let Some(index) = registration
            .contract
            .capabilities()
            .iter()
            .position(|c| c.name().as_str() == capability)
        else {
            return false;
        };
        let inner = &self.registry.inner;
        let mut state = inner.state();
        let value = availability.map(|(available, reason)| Override {
            available,
            reason: reason.map(Arc::from),
        });
        let available = value.as_ref().is_none_or(|o| o.available);
        if !registration.is_active() || !registration.set_override(index, value) {
            return true;
        }
        let events = match registration.capability(index) {
            Some(capability) if inner.dispatcher.active() => {
                vec![SurfaceEvent::AvailabilityChanged {
                    registration_id: Arc::clone(&registration.id),
                    capability_id: Arc::clone(capability.id().as_arc()),
                    available,
                }]
            }
            _ => Vec::new(),
        };
        inner.bump(&mut state, events);
        drop(state);
        inner.dispatcher.drain();
        true
    }

    /// Tells the registry that the application state this component's
    /// availability reads has changed (a selection, a route, a loaded
    /// list). The registry re-evaluates every `when` of this registration
    /// and of its procedure references; only when an availability (or its
    /// reason) actually changed does it bump the surface version and emit
    /// `availability-changed` and `surface-changed`, which every consumer
    /// hears (toolset subscriptions, MCP `tools/list_changed`, the testing
    /// harness). Returns whether the surface changed.
    ///
    /// Cheap enough to call after every render: with nothing changed it
    /// runs the predicates, compares and returns, emitting nothing. (The
    /// specification's `invalidate` bumps unconditionally; that is
    /// [`bump_version`](Self::bump_version).)
    pub fn invalidate(&self) -> bool {
        let Some(registration) = self.live() else {
            return false;
        };
        let Some(component) = registration.component() else {
            return false;
        };
        // Predicates are host code: evaluated with no registry lock held.
        let Some(changed) = registration.reevaluate(&**component) else {
            return false;
        };
        let inner = &self.registry.inner;
        let events = if inner.dispatcher.active() {
            changed
                .capabilities
                .iter()
                .filter_map(|&index| {
                    let capability = registration.capability(index)?;
                    let available = registration.availability(index, Some(&**component))
                        == Availability::Available;
                    Some(SurfaceEvent::AvailabilityChanged {
                        registration_id: Arc::clone(&registration.id),
                        capability_id: Arc::clone(capability.id().as_arc()),
                        available,
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        drop(component);
        let mut state = inner.state();
        if !registration.is_active() {
            return false;
        }
        inner.bump(&mut state, events);
        drop(state);
        inner.dispatcher.drain();
        true
    }

    /// Bumps the surface version without changing anything (the
    /// specification's handle `invalidate`): every consumer re-reads the
    /// surface. Prefer [`invalidate`](Self::invalidate), which bumps only
    /// when availability changed.
    pub fn bump_version(&self) {
        if self.live().is_none() {
            return;
        }
        let inner = &self.registry.inner;
        let mut state = inner.state();
        inner.bump(&mut state, Vec::new());
        drop(state);
        inner.dispatcher.drain();
    }

    /// Unmounts now (the same as dropping the handle).
    pub fn unmount(self) {}
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(registration) = self.registration.take() {
            self.registry.unregister(&registration);
        }
    }
}

/// A mount being configured; see [`Registry::mounting`].
#[must_use = "call `.mount()` to mount the component"]
pub struct MountBuilder<'r> {
    registry: &'r Registry,
    contract: Result<&'static CheckedContract, DefinitionError>,
    component: Arc<dyn Component>,
    instance: Option<String>,
    enabled: Option<bool>,
    references: Vec<ErasedRef>,
}

impl fmt::Debug for MountBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MountBuilder")
            .field("instance", &self.instance)
            .field("enabled", &self.enabled)
            .field("references", &self.references.len())
            .finish_non_exhaustive()
    }
}

impl MountBuilder<'_> {
    /// The instance id (default: the contract's). Derive it from data (an
    /// entity id, a semantic slot), never from render or mount order.
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }

    /// The initial master switch (default: the contract's `enabled`).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = Some(enabled);
        self
    }

    /// References backend procedure `P` with this mount's bindings. It is
    /// exposed only while the installed executor's manifest lists it.
    pub fn procedure<P: Procedure>(mut self, reference: ProcedureRef<P>) -> Self {
        self.references.push(reference.erase());
        self
    }

    /// Mounts. Structural defects and manifest disagreements fail; runtime
    /// refusals (duplicates, the registration guard) return a rejected handle.
    pub fn mount(self) -> Result<Mounted, MountError> {
        let contract = self.contract?;
        let instance = match &self.instance {
            None => contract.default_instance().clone(),
            Some(instance) => InstanceId::new(instance).map_err(|err| {
                DefinitionError::new(
                    crate::error::DefinitionErrorKind::InvalidId,
                    contract.component_type().as_str(),
                    err.to_string(),
                )
            })?,
        };
        let enabled = self.enabled.unwrap_or_else(|| contract.enabled());
        self.registry
            .mount_checked(contract, self.component, instance, enabled, self.references)
    }
}

/// The registry. Cheap to clone (`Arc` inside); `Send + Sync`.
#[derive(Clone)]
pub struct Registry {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("surface_id", &self.inner.surface_id)
            .field("version", &self.version())
            .finish_non_exhaustive()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::builder().build()
    }
}

impl Registry {
    /// A builder with the specification's defaults.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder {
            environment: Environment::default(),
            host: None,
            policies: Vec::new(),
            audit: None,
            guard: None,
            duplicates: DuplicatePolicy::default(),
            suffixes: SuffixPolicy::default(),
            route: None,
            limits: Limits::default(),
            clock: None,
            redact: None,
            procedure_errors: None,
        }
    }

    /// `srf_` + 22 base62 characters, minted per registry.
    pub fn surface_id(&self) -> &str {
        &self.inner.surface_id
    }

    /// The current surface version (0 for an empty, fresh registry).
    pub fn version(&self) -> u64 {
        self.inner.version()
    }

    /// Watches the surface version; adapters refresh when it moves.
    pub fn watch_version(&self) -> watch::Receiver<u64> {
        let state = self.inner.state();
        let sender = self.inner.version_tx.get_or_init(|| watch::channel(0).0);
        sender.send_replace(state.version);
        let receiver = sender.subscribe();
        drop(state);
        receiver
    }

    /// The registry's environment.
    pub fn environment(&self) -> Environment {
        self.inner.config.environment
    }

    /// The registry's limits.
    pub fn limits(&self) -> &Limits {
        &self.inner.config.limits
    }

    /// The registry's clock, in epoch milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }

    /// Subscribes to surface events (delivered in mutation order, never
    /// re-entrantly). Dropping the [`Subscription`] unsubscribes.
    pub fn subscribe(
        &self,
        listener: impl Fn(&SurfaceEvent) + Send + Sync + 'static,
    ) -> Subscription {
        let listener: Listener = Arc::new(listener);
        self.inner.dispatcher.subscribe(listener)
    }

    /// The default in-memory audit sink's events (empty when a custom sink
    /// replaced it).
    pub fn audit_log(&self) -> Vec<AuditEvent> {
        self.inner.memory_audit.events()
    }

    /// Mounts a component under its contract's default instance id.
    pub fn mount<T: Component>(&self, component: Arc<T>) -> Result<Mounted, MountError> {
        self.mounting(component).mount()
    }

    /// Mounts a component under an instance id derived from data (an entity
    /// id, a semantic slot), never from render or mount order.
    pub fn mount_instance<T: Component>(
        &self,
        component: Arc<T>,
        instance: &str,
    ) -> Result<Mounted, MountError> {
        self.mounting(component).instance(instance).mount()
    }

    /// Starts a mount with options: an instance id, the initial master
    /// switch, and references to backend procedures.
    ///
    /// ```
    /// # use agent_surface::prelude::*;
    /// # use agent_surface::procedure::{Procedure, ProcedureRef};
    /// # use std::sync::Arc;
    /// /// Archive a project.
    /// #[agent_procedure(id = "domain:projects.archive", effect = "server-mutation")]
    /// pub struct Archive {
    ///     /// The project.
    ///     pub project_id: String,
    /// }
    /// /// A project page.
    /// #[agent_component(type = "projects.page")]
    /// impl Page {
    ///     /// The project shown.
    ///     #[observation]
    ///     fn project(&self) -> String {
    ///         self.0.clone()
    ///     }
    /// }
    /// struct Page(String);
    ///
    /// let registry = Registry::default();
    /// let page = Arc::new(Page("p1".into()));
    /// let shown = Arc::clone(&page);
    /// let mounted = registry
    ///     .mounting(page)
    ///     .instance("p1")
    ///     .procedure(
    ///         ProcedureRef::<Archive>::new().bind(Archive::fields().project_id, move || shown.0.clone()),
    ///     )
    ///     .mount()?;
    /// # let _ = mounted;
    /// # Ok::<(), agent_surface::registry::MountError>(())
    /// ```
    pub fn mounting<T: Component>(&self, component: Arc<T>) -> MountBuilder<'_> {
        MountBuilder {
            registry: self,
            contract: T::contract().checked(),
            component,
            instance: None,
            enabled: None,
            references: Vec::new(),
        }
    }

    fn check_limits(&self, contract: &CheckedContract) -> Result<(), DefinitionError> {
        let limits = &self.inner.config.limits;
        let defaults = Limits::default();
        contract.check_limits(&self.inner.schema_limits())?;
        let stricter = limits.max_component_description < defaults.max_component_description
            || limits.max_capability_description < defaults.max_capability_description
            || limits.max_meta_bytes < defaults.max_meta_bytes;
        if stricter {
            contract.check_text_limits(
                limits.max_component_description,
                limits.max_capability_description,
                limits.max_meta_bytes,
            )?;
        }
        Ok(())
    }

    /// Builds the references of a mount and checks them against the
    /// installed manifest: absent procedures are not exposed; disagreeing
    /// ones fail the mount.
    fn references(
        &self,
        contract: &CheckedContract,
        erased: Vec<ErasedRef>,
    ) -> Result<Box<[Arc<Reference>]>, MountError> {
        if erased.is_empty() {
            return Ok(Box::default());
        }
        let inner = &self.inner;
        let component_policies = contract.policies();
        let executor = inner.executor();
        let mut references: Vec<Arc<Reference>> = Vec::with_capacity(erased.len());
        for mut reference in erased {
            let id = reference.contract().id();
            if references.iter().any(|r| &**r.id() == id) {
                return Err(MountError::Definition(DefinitionError::new(
                    crate::error::DefinitionErrorKind::DuplicateCapability,
                    id,
                    "the component references this procedure twice",
                )));
            }
            let policies = std::mem::take(&mut reference.policies);
            let chain = Chain::compose(&inner.config.policies, &component_policies, policies);
            let built = reference.build(chain)?;
            built.capability.input_schema().map_or(Ok(()), |schema| {
                schema
                    .within(&inner.schema_limits())
                    .map_err(|err| err.within(id))
            })?;
            let entry = executor
                .as_ref()
                .and_then(|executor| executor.manifest().get(id).cloned());
            match entry {
                Some(entry) => {
                    crate::procedure::agree(built.procedure, &entry)
                        .map_err(MountError::Manifest)?;
                    built.exposed.store(true, Ordering::Release);
                }
                None => {
                    tracing::info!(
                        procedure = id,
                        "the backend manifest does not list this procedure; the reference registers nothing"
                    );
                }
            }
            references.push(Arc::new(built));
        }
        Ok(references.into_boxed_slice())
    }

    fn mount_checked(
        &self,
        contract: &'static CheckedContract,
        component: Arc<dyn Component>,
        instance: InstanceId,
        enabled: bool,
        references: Vec<ErasedRef>,
    ) -> Result<Mounted, MountError> {
        let inner = &self.inner;
        if inner.disposed.is_cancelled() {
            return Err(MountError::Disposed);
        }
        self.check_limits(contract)?;
        let references = self.references(contract, references)?;
        let registration_id: Arc<str> = Arc::from(inner.ids.registration_id());
        let component_type = Arc::clone(contract.component_type().as_arc());

        if let Some(guard) = &inner.config.guard {
            let candidate = RegistrationCandidate {
                component_type: &component_type,
                instance_id: instance.as_str(),
                origin: contract.origin(),
                capabilities: contract
                    .capabilities()
                    .iter()
                    .map(|c| c.id())
                    .chain(
                        references
                            .iter()
                            .filter(|r| r.is_exposed())
                            .map(|r| r.procedure.id()),
                    )
                    .collect(),
            };
            let verdict =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guard(&candidate)))
                    .unwrap_or(GuardDecision::Reject);
            if verdict == GuardDecision::Reject {
                return Ok(self.rejected(registration_id, component_type, instance, "guard"));
            }
        }

        let chains = if contract.has_own_policies() {
            let component_policies = contract.policies();
            Chains::Each(
                contract
                    .capabilities()
                    .iter()
                    .map(|capability| {
                        Chain::compose(
                            &inner.config.policies,
                            &component_policies,
                            capability.policies(),
                        )
                    })
                    .collect(),
            )
        } else {
            // Only the registry's chain: shared, nothing to build per mount.
            Chains::Shared(Arc::clone(&inner.base_chain))
        };
        let registration = Arc::new(Registration::new(
            Arc::clone(&registration_id),
            contract,
            instance.clone(),
            component,
            enabled,
            chains,
            references,
        ));

        // The baseline `invalidate` compares against (predicates are host
        // code: evaluated before any lock is taken).
        if registration.has_state_derived_availability()
            && let Some(component) = registration.component()
        {
            let _ = registration.reevaluate(&**component);
        }
        let now = inner.now_ms();
        let mut state = inner.state();
        let collision = self.suffix_collision(&state, contract);
        if let (Some((view, domain)), SuffixPolicy::Error) = (&collision, inner.config.suffixes) {
            let released = registration.release();
            drop(state);
            released.drop_unlocked();
            return Err(MountError::SuffixCollision {
                view: view.to_string(),
                domain: domain.to_string(),
            });
        }
        let mut events = Vec::new();
        let mut replaced = None;
        let mut released = None;
        let existing = state
            .by_type
            .get(&*component_type)
            .and_then(|instances| instances.get(&instance))
            .cloned();
        if let Some(existing) = existing {
            match inner.config.duplicates {
                DuplicatePolicy::Reject => {
                    let released = registration.release();
                    drop(state);
                    released.drop_unlocked();
                    return Ok(self.rejected(
                        registration_id,
                        component_type,
                        instance,
                        "duplicate",
                    ));
                }
                DuplicatePolicy::Replace => {
                    state.remove(&existing, now);
                    released = Some(existing.release());
                    events.push(SurfaceEvent::ComponentUnregistered {
                        registration_id: Arc::clone(&existing.id),
                        component_type: Arc::clone(&component_type),
                        instance_id: Arc::clone(instance.as_arc()),
                    });
                    replaced = Some(existing);
                }
            }
        }
        state.insert(&registration);
        if inner.dispatcher.active() {
            events.push(SurfaceEvent::ComponentRegistered {
                registration_id: Arc::clone(&registration_id),
                component_type: Arc::clone(&component_type),
                instance_id: Arc::clone(instance.as_arc()),
            });
            if let (Some((view, domain)), SuffixPolicy::Warn) = (&collision, inner.config.suffixes)
            {
                events.push(SurfaceEvent::CollisionSuspected {
                    view_capability_id: Arc::clone(view),
                    domain_procedure_id: Arc::clone(domain),
                });
            }
        }
        inner.bump(&mut state, events);
        drop(state);

        if let Some(replaced) = replaced {
            replaced.abort();
            self.audit_registration(AuditKind::Unregistration, &replaced.id, now, None);
        }
        // The replaced component's destructor may unmount others: no lock held.
        if let Some(released) = released {
            released.drop_unlocked();
        }
        if let (Some((view, domain)), SuffixPolicy::Warn) = (&collision, inner.config.suffixes) {
            tracing::warn!(%view, %domain, "a view capability shares its suffix with a domain procedure");
            let mut event = AuditEvent::new(AuditKind::CollisionSuspected, now);
            event.capability_id = Some(Arc::clone(view));
            event.detail = Some(serde_json::Map::from_iter([(
                "domainProcedureId".to_owned(),
                serde_json::Value::from(domain.to_string()),
            )]));
            inner.record(&event);
        }
        self.audit_registration(AuditKind::Registration, &registration_id, now, None);
        inner.dispatcher.drain();
        Ok(Mounted {
            registry: self.clone(),
            registration_id,
            registration: Some(registration),
        })
    }

    fn suffix_collision(
        &self,
        state: &State,
        contract: &CheckedContract,
    ) -> Option<(Arc<str>, Arc<str>)> {
        if self.inner.config.suffixes == SuffixPolicy::Off || state.known_procedures.is_empty() {
            return None;
        }
        contract.capabilities().iter().find_map(|capability| {
            let suffix = capability.id().path();
            state
                .known_procedures
                .iter()
                .find(|known| known.strip_prefix("domain:") == Some(suffix))
                .map(|known| (Arc::clone(capability.id().as_arc()), Arc::clone(known)))
        })
    }

    fn rejected(
        &self,
        registration_id: Arc<str>,
        component_type: Arc<str>,
        instance: InstanceId,
        reason: &'static str,
    ) -> Mounted {
        let inner = &self.inner;
        if inner.config.environment == Environment::Development {
            tracing::error!(%component_type, instance = %instance, reason, "mount rejected");
        }
        let mut event = AuditEvent::new(AuditKind::RegistrationRejected, inner.now_ms());
        event.registration_id = Some(Arc::clone(&registration_id));
        event.detail = Some(serde_json::Map::from_iter([
            (
                "componentType".to_owned(),
                serde_json::Value::from(component_type.to_string()),
            ),
            (
                "instanceId".to_owned(),
                serde_json::Value::from(instance.as_str()),
            ),
            ("reason".to_owned(), serde_json::Value::from(reason)),
        ]));
        inner.record(&event);
        inner.dispatcher.emit([SurfaceEvent::ComponentRejected {
            component_type,
            instance_id: Arc::clone(instance.as_arc()),
            reason,
        }]);
        Mounted {
            registry: self.clone(),
            registration_id,
            registration: None,
        }
    }

    fn audit_registration(
        &self,
        kind: AuditKind,
        registration_id: &Arc<str>,
        now: u64,
        detail: Option<serde_json::Map<String, serde_json::Value>>,
    ) {
        let mut event = AuditEvent::new(kind, now);
        event.registration_id = Some(Arc::clone(registration_id));
        event.detail = detail;
        self.inner.record(&event);
    }

    pub(crate) fn unregister(&self, registration: &Arc<Registration>) {
        let inner = &self.inner;
        let now = inner.now_ms();
        let mut state = inner.state();
        if !registration.is_active() {
            return;
        }
        state.remove(registration, now);
        let released = registration.release();
        let events = if inner.dispatcher.active() {
            vec![SurfaceEvent::ComponentUnregistered {
                registration_id: Arc::clone(&registration.id),
                component_type: Arc::clone(registration.contract.component_type().as_arc()),
                instance_id: Arc::clone(registration.instance.as_arc()),
            }]
        } else {
            Vec::new()
        };
        inner.bump(&mut state, events);
        drop(state);
        registration.abort();
        self.audit_registration(AuditKind::Unregistration, &registration.id, now, None);
        inner.dispatcher.drain();
        // Last: the destructor may unmount other components (nested mounts)
        // and may panic; neither can hold up or undo this unmount.
        released.drop_unlocked();
    }

    /// Tells the registry which domain procedure ids exist (for
    /// suffix-collision diagnostics). Installing an executor sets them from
    /// its manifest.
    pub fn set_known_procedures(&self, ids: impl IntoIterator<Item = impl Into<Arc<str>>>) {
        self.inner.state().known_procedures = ids.into_iter().map(Into::into).collect();
    }

    /// Installs (or, with `None`, removes) the executor of domain
    /// procedures. Its manifest becomes the ceiling: live references to
    /// procedures it lists (and agrees with) are exposed, the others are
    /// withdrawn; the version moves when that changes anything. Returns the
    /// live references that disagree with the manifest (they stay withdrawn).
    pub fn set_procedure_executor(
        &self,
        executor: Option<Arc<dyn ProcedureExecutor>>,
    ) -> Vec<ManifestMismatch> {
        let inner = &self.inner;
        // A panicking manifest fails closed: nothing is exposed.
        let manifest = executor.as_ref().and_then(|executor| {
            crate::util::contain::contained("procedure executor manifest", || executor.manifest())
        });
        let mut state = inner.state();
        state.known_procedures = manifest
            .map(|manifest| manifest.entries().map(|e| Arc::from(e.id())).collect())
            .unwrap_or_default();
        let mut mismatches = Vec::new();
        let mut changed = false;
        for registration in state.live.values() {
            for reference in registration.references.iter() {
                let entry = manifest.and_then(|manifest| manifest.get(reference.id()));
                let exposed = match entry {
                    Some(entry) => match crate::procedure::agree(reference.procedure, entry) {
                        Ok(()) => true,
                        Err(mismatch) => {
                            tracing::error!(%mismatch, "a live procedure reference disagrees with the new manifest; it is withdrawn");
                            mismatches.push(mismatch);
                            false
                        }
                    },
                    None => false,
                };
                changed |= reference.exposed.swap(exposed, Ordering::AcqRel) != exposed;
            }
        }
        let previous = std::mem::replace(
            &mut *inner
                .executor
                .write()
                .unwrap_or_else(PoisonError::into_inner),
            executor,
        );
        if changed {
            state.index_procedures();
            state.ordered = None;
            inner.bump(&mut state, Vec::new());
        }
        drop(state);
        inner.dispatcher.drain();
        crate::util::contain::drop_contained("procedure executor destructor", previous);
        mismatches
    }

    /// Whether [`dispose`](Self::dispose) was called.
    pub fn is_disposed(&self) -> bool {
        self.inner.disposed.is_cancelled()
    }

    /// Tears down: unmounts everything, settles in-flight invocations as
    /// `CANCELLED`, expires pending confirmations and drops listeners.
    pub fn dispose(&self) {
        let inner = &self.inner;
        if inner.disposed.is_cancelled() {
            return;
        }
        inner.disposed.cancel();
        inner.admission.close();
        let live: Vec<Arc<Registration>> = inner.state().live.values().cloned().collect();
        for registration in live {
            self.unregister(&registration);
        }
        inner.confirmations.expire_all(self);
        inner.dispatcher.drain();
        inner.dispatcher.clear();
    }
}
