//! The registry: the single source of truth for what agents can reach. Build
//! one with [`Registry::builder`], mount components on it, and hand it to an
//! adapter (the toolset, MCP) or the testing harness.
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

mod authority;
mod calls;
mod config;
mod confirmations;
mod consumers;
mod handle;
mod insertion;
mod limits;
mod mount;
mod procedures;
mod registration;
mod state;

pub use config::{
    DuplicatePolicy, GuardDecision, RegistrationCandidate, RegistryBuilder, RouteInfo, SuffixPolicy,
};
pub use handle::{AvailabilityOverride, Mounted, RegistrationStatus};
pub use limits::Limits;
pub use mount::{MountBuilder, MountError};
pub(crate) use state::{State, Tombstone};

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

pub(crate) use registration::{Availability, Chain, Registration, vote};

use crate::audit::{self, AuditEvent, AuditSink, MemoryAuditSink};
use crate::clock::{Clock, TokioClock};
use crate::confirmation::ConfirmationStore;
use crate::context::{Environment, HostContext};
use crate::events::{Dispatcher, Listener, Subscription, SurfaceEvent};
use crate::primitives::concurrency::Admission;
use crate::primitives::dedupe::Dedupe;
use crate::procedure::ProcedureExecutor;
use crate::schema::SchemaLimits;
use crate::util::id_mint::IdMint;

/// The registry's services: its state and what every call uses (the
/// clock, ids, the event dispatcher, the dedupe window, admission,
/// confirmations, the configuration). Its fields are private to
/// `registry/`: the pipeline, snapshots and explanations reach them through
/// the methods below (a narrow, named handle), so what they touch is
/// listed in one place.
///
/// Creating a registry allocates only this: everything that needs
/// randomness, a clock reading or an allocation of its own (ids, the
/// surface id, the default clock, the event dispatcher, admission, the
/// disposal token) is made on first use.
pub(crate) struct Services {
    /// `srf_…`, minted on first use.
    surface_id: LazyLock<Arc<str>>,
    /// Shared by every registry built with the defaults.
    config: config::ConfigRef,
    clock: ClockSlot,
    ids: IdMint,
    state: Mutex<State>,
    dispatcher: LazyLock<Arc<Dispatcher>>,
    /// The sink the host installed, or the console sink in development.
    audit: Option<Arc<dyn AuditSink>>,
    /// Whether the default in-memory sink records (not when the host
    /// installed its own sink).
    memory_on: bool,
    /// Inline, not made on first use: every registry that mounts records
    /// an event, so a lazy buffer would only add an allocation.
    memory_audit: MemoryAuditSink,
    /// Made by the first call that brings an invocation id (see
    /// [`Services::dedupe`]): a registry whose calls never do stays small.
    dedupe: std::sync::OnceLock<Box<Mutex<Dedupe>>>,
    confirmations: ConfirmationStore,
    /// Boxed (an `Arc` made on first use): inline, its queues and map
    /// would grow every registry's creation and drop by a third.
    admission: LazyLock<Arc<Admission>>,
    /// Fired by `dispose()`.
    disposed: crate::util::disposal::Disposal,
    /// Created by the first `watch_version`.
    version_tx: std::sync::OnceLock<watch::Sender<u64>>,
    /// The version, readable without the state lock (written under it).
    version: std::sync::atomic::AtomicU64,
    /// The host context used when no provider is configured.
    empty_host: &'static HostContext,
    /// The consumer of calls that name none.
    anonymous: &'static crate::context::Consumer,
    /// The installed procedure executor.
    executor: std::sync::RwLock<Option<Arc<dyn ProcedureExecutor>>>,
}

impl Services {
    /// `srf_…`, minted on first use.
    pub(crate) fn surface_id(&self) -> &Arc<str> {
        &self.surface_id
    }

    /// The registry's configuration.
    pub(crate) fn config(&self) -> &config::Config {
        &self.config
    }

    /// The registry's limits.
    pub(crate) fn limits(&self) -> &Limits {
        &self.config.limits
    }

    /// Mints invocation and registration ids.
    pub(crate) fn ids(&self) -> &IdMint {
        &self.ids
    }

    /// Surface events, delivered to listeners.
    pub(crate) fn dispatcher(&self) -> &Arc<Dispatcher> {
        &self.dispatcher
    }

    /// The confirmation store.
    pub(crate) fn confirmations(&self) -> &ConfirmationStore {
        &self.confirmations
    }

    /// Observation admission and the action queues (made on first use).
    pub(crate) fn admission(&self) -> &Admission {
        &self.admission
    }

    /// Fired by `dispose()`.
    pub(crate) fn disposal(&self) -> &crate::util::disposal::Disposal {
        &self.disposed
    }

    /// The consumer of calls that name none.
    pub(crate) fn anonymous(&self) -> &'static crate::context::Consumer {
        self.anonymous
    }

    /// The live registrations in surface order, with the surface version
    /// they are at (read together, under one lock).
    pub(crate) fn ordered(&self) -> (Arc<Vec<Arc<Registration>>>, u64) {
        let mut state = self.state();
        (state.ordered(), state.version())
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The dedupe window if a call ever made it (nothing to read or forget
    /// otherwise).
    pub(crate) fn dedupe_if_made(&self) -> Option<MutexGuard<'_, Dedupe>> {
        let dedupe = self.dedupe.get()?;
        Some(dedupe.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The dedupe window, made on first use with the registry's limits.
    pub(crate) fn dedupe(&self) -> MutexGuard<'_, Dedupe> {
        self.dedupe
            .get_or_init(|| {
                let limits = &self.config.limits;
                Box::new(Mutex::new(Dedupe::new(
                    crate::primitives::dedupe::WindowLimits {
                        count: limits.dedupe_cache_size,
                        bytes: limits.dedupe_cache_bytes,
                        ttl_ms: crate::util::millis::millis(limits.dedupe_cache_ttl),
                        in_flight_per_consumer: limits.max_in_flight_per_consumer.max(1),
                    },
                )))
            })
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The clock's reading: contained and monotonic (see
    /// [`Monotonic`](crate::clock::Monotonic)).
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.get().now_ms()
    }

    /// The clock's reading at `at`, a tokio instant read just now by the
    /// caller: derived from it when the registry runs on the default clock
    /// (one reading serves a call's timings and its audit time), read anew
    /// from a host's clock otherwise.
    pub(crate) fn ms_at(&self, at: crate::util::time::Instant) -> u64 {
        if let ClockSlot::Default { clock, .. } = &self.clock
            && let Some(ms) = clock.get().and_then(|clock| clock.ms_at(at))
        {
            return ms;
        }
        self.now_ms()
    }

    /// [`ms_at`](Self::ms_at) for use under a lock, only if asked: a host's
    /// clock is host code, so it is read now, before the caller locks; the
    /// default clock's reading is arithmetic on `at`, done when (and if) the
    /// returned reading is called.
    pub(crate) fn ms_at_for_lock(&self, at: crate::util::time::Instant) -> impl Fn() -> u64 + '_ {
        let host = (!matches!(self.clock, ClockSlot::Default { .. })).then(|| self.ms_at(at));
        move || host.unwrap_or_else(|| self.ms_at(at))
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
            clock: self.clock.get(),
            shared: self.config.shared.as_ref(),
        }
    }

    /// The current version, without taking the state lock.
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub(crate) fn record(&self, event: &AuditEvent) {
        if self.memory_on {
            audit::record(&self.memory_audit, event);
        }
        if let Some(sink) = &self.audit {
            audit::record(sink.as_ref(), event);
        }
    }

    /// Records into the registry's sinks, then into the sinks of the
    /// policies that govern the call (`None`: no policy sinks).
    pub(crate) fn record_with(
        &self,
        event: AuditEvent,
        policy_sinks: Option<&[Arc<dyn AuditSink>]>,
    ) {
        match policy_sinks.filter(|sinks| !sinks.is_empty()) {
            Some(sinks) => {
                self.record(&event);
                for sink in sinks {
                    audit::record(sink.as_ref(), &event);
                }
            }
            None => self.record_owned(event),
        }
    }

    /// [`record`](Self::record) for an event the caller no longer needs:
    /// the in-memory sink keeps it without a copy.
    pub(crate) fn record_owned(&self, event: AuditEvent) {
        if let Some(sink) = &self.audit {
            audit::record(sink.as_ref(), &event);
        }
        if self.memory_on {
            drop(self.memory_audit.push(event));
        }
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

/// The registry's clock: the host's, or the default one, anchored on first
/// use (so creating a registry reads no clock).
pub(crate) enum ClockSlot {
    /// Installed with [`RegistryBuilder::clock`], read contained and monotonic.
    Custom(crate::clock::Monotonic),
    /// Wall time that follows tokio's clock.
    Default {
        clock: std::sync::OnceLock<TokioClock>,
        /// The runtime the registry was built in, until the clock is
        /// anchored: a first use on a thread outside any runtime still
        /// anchors on that runtime's (possibly paused) time.
        runtime: Mutex<Option<tokio::runtime::Handle>>,
    },
}

impl ClockSlot {
    /// The default clock, following the runtime current at build, if any.
    pub(crate) fn default_clock() -> ClockSlot {
        ClockSlot::Default {
            clock: std::sync::OnceLock::new(),
            runtime: Mutex::new(tokio::runtime::Handle::try_current().ok()),
        }
    }

    pub(crate) fn get(&self) -> &dyn Clock {
        match self {
            ClockSlot::Custom(clock) => clock,
            ClockSlot::Default { clock, runtime } => clock.get_or_init(|| {
                let built_in = runtime
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                match built_in {
                    Some(handle) if tokio::runtime::Handle::try_current().is_err() => {
                        let _entered = handle.enter();
                        TokioClock::new()
                    }
                    _ => TokioClock::new(),
                }
            }),
        }
    }
}

/// The registry. Cheap to clone (`Arc` inside); `Send + Sync`.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Services>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("surface_id", &&**self.inner.surface_id)
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
    /// The registry's services: what the pipeline, snapshots and
    /// explanations work on.
    pub(crate) fn services(&self) -> &Arc<Services> {
        &self.inner
    }

    /// A builder with the specification's defaults.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
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
        let version = state.version;
        let sender = self
            .inner
            .version_tx
            .get_or_init(|| watch::channel(version).0);
        // Catches up only a value that fell behind while nobody watched:
        // a new watcher never wakes the others (any caller can attach
        // watchers; each wake-up makes every watcher re-check its view).
        sender.send_if_modified(|current| {
            let behind = *current != version;
            *current = version;
            behind
        });
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

    /// The shared store this registry's replicas share, with its
    /// surface's namespace ([`RegistryBuilder::shared_store`]); `None` for
    /// a registry of one process. For adapters that keep their own state
    /// across replicas (an MCP server's input-required rounds).
    pub fn shared_store(
        &self,
    ) -> Option<(Arc<dyn crate::store::SharedStore>, crate::store::Namespace)> {
        self.inner
            .config
            .shared
            .as_ref()
            .map(|shared| (Arc::clone(&shared.store), shared.namespace.clone()))
    }

    /// The host context now, as policies and handlers see it (the
    /// provider's answer; an empty context without one, or if it panics).
    pub fn host_context(&self) -> HostContext {
        self.inner.host()
    }

    /// The registry's clock, in epoch milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }

    /// Subscribes to surface events (delivered in mutation order, never
    /// re-entrantly, one at a time). Dropping the [`Subscription`]
    /// unsubscribes.
    ///
    /// Keep listeners quick: a call delivers the events queued when it
    /// began delivering; what arrives meanwhile is delivered by the
    /// registry's delivery thread (so a listener may run on a thread of its
    /// own, inside the caller's tokio runtime when there is one). At most
    /// [`MAX_QUEUED_EVENTS`](crate::events::MAX_QUEUED_EVENTS) events wait;
    /// beyond that listeners receive
    /// [`SurfaceEvent::EventsDropped`] where the gap is.
    pub fn subscribe(
        &self,
        listener: impl Fn(&SurfaceEvent) + Send + Sync + 'static,
    ) -> Subscription {
        let listener: Listener = Arc::new(listener);
        self.inner.dispatcher.subscribe(listener)
    }

    /// Events waiting for delivery now (bounded by
    /// [`MAX_QUEUED_EVENTS`](crate::events::MAX_QUEUED_EVENTS)): how far
    /// listeners are behind.
    pub fn event_backlog(&self) -> usize {
        self.inner.dispatcher.backlog()
    }

    /// The default in-memory audit sink's events (empty when a custom sink
    /// replaced it).
    pub fn audit_log(&self) -> Vec<AuditEvent> {
        self.inner.memory_audit.events()
    }

    /// Whether [`dispose`](Self::dispose) was called.
    pub fn is_disposed(&self) -> bool {
        self.inner.disposed.is_cancelled()
    }

    /// Tears down: unmounts everything, settles in-flight invocations as
    /// `CANCELLED`, expires pending confirmations and drops listeners.
    pub fn dispose(&self) {
        let inner = &self.inner;
        if !inner.disposed.cancel() {
            return;
        }
        inner.admission.close();
        let live: Vec<Arc<Registration>> = inner.state().live.values().cloned().collect();
        for registration in live {
            self.unregister(&registration);
        }
        inner.confirmations.expire_all(&**inner);
        inner.dispatcher.drain();
        inner.dispatcher.clear();
    }
}
