//! The testing harness (feature `testing`): a reference consumer for tests of
//! any crate that declares a surface. No model needed. Wrap a registry in a
//! [`TestSurface`] and call it as an agent would.
//!
//! [`TestSurface`] owns a registry whose host context can be swapped and
//! whose clock is manual (timestamps and confirmation expiry are
//! deterministic), invokes capabilities the way an adapter would (fresh
//! invocation ids, registration ids from the latest snapshot), reads typed
//! observations, captures staleness tokens, drives confirmations, records
//! events, and tells exposed, exposed-but-unavailable and hidden apart.
//! [`TestSurface::semantic_snapshot`] normalizes the volatile parts of a
//! snapshot so it can be committed (with `insta`, for example).
//!
//! ```
//! use agent_surface::prelude::*;
//! use agent_surface::testing::{Exposure, TestSurface};
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//!
//! /// A counter.
//! #[agent_component(type = "demo.counter")]
//! impl Counter {
//!     /// The value.
//!     #[observation]
//!     fn value(&self) -> u64 {
//!         self.0.load(Ordering::SeqCst)
//!     }
//!     /// Add one.
//!     #[action(effect = "local-state")]
//!     fn increment(&self) {
//!         self.0.fetch_add(1, Ordering::SeqCst);
//!     }
//! }
//! struct Counter(AtomicU64);
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let surface = TestSurface::new();
//! let _mounted = surface.registry().mount(Arc::new(Counter(AtomicU64::new(0)))).unwrap();
//! assert_eq!(surface.exposure("view:demo.counter.increment"), Exposure::Exposed);
//! assert!(surface.invoke("view:demo.counter.increment", serde_json::json!({})).await.is_ok());
//! let value: u64 = surface.observe("view:demo.counter.value").await.unwrap();
//! assert_eq!(value, 1);
//! # });
//! ```
#![doc = include_str!("../docs/testing.md")]
#![allow(clippy::panic)] // assertions are the point of a test harness

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::audit::AuditEvent;
use crate::clock::ManualClock;
use crate::confirmation::{PendingConfirmation, Resolution, ResolveError};

/// The in-app approval channel through which the harness answers, as the
/// person would.
pub const TESTING_CHANNEL: &str = "testing";
use crate::context::{Consumer, ConsumerKind, HostContext};
use crate::error::ErrorPayload;
use crate::events::{Subscription, SurfaceEvent};
use crate::invoke::{Invocation, InvocationResult, InvokeOptions};
use crate::registry::{Registry, RegistryBuilder};
use crate::snapshot::{Snapshot, SnapshotOptions};

/// 2026-01-01T00:00:00Z: where the harness clock starts.
pub const START_MS: u64 = 1_767_225_600_000;

/// How one capability appears to the harness's consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exposure {
    /// Listed and available.
    Exposed,
    /// Listed, unavailable, with the reason shown.
    Unavailable(String),
    /// Not listed (hidden or nonexistent: indistinguishable on purpose).
    NotExposed,
}

/// A captured staleness token.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CapturedRef {
    /// The registration that offered the capability.
    pub registration_id: String,
    /// The surface version at capture.
    pub surface_version: String,
}

/// Why [`TestSurface::observe`] failed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ObserveError {
    /// The call settled with an error.
    Failed(ErrorPayload),
    /// The output does not deserialize into the requested type.
    Type(String),
    /// The surface version moved during the observation: observations must
    /// not mutate the surface.
    SurfaceMoved {
        /// Before the call.
        before: u64,
        /// After it.
        after: u64,
    },
}

impl fmt::Display for ObserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObserveError::Failed(error) => write!(f, "the observation failed: {error}"),
            ObserveError::Type(message) => write!(f, "the output has another shape: {message}"),
            ObserveError::SurfaceMoved { before, after } => write!(
                f,
                "the surface version moved from {before} to {after} during an observation"
            ),
        }
    }
}

impl std::error::Error for ObserveError {}

/// Everything [`TestSurface::invoke_with`] can set: [`Call::default`] and
/// a chainable setter per field.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Call {
    /// The instance.
    pub instance_id: Option<String>,
    /// The registration (default: the one in the latest snapshot).
    pub registration_id: Option<String>,
    /// The surface version hint.
    pub surface_version: Option<String>,
    /// Confirmation evidence.
    pub confirmation_id: Option<String>,
    /// The invocation id (default: a fresh one).
    pub invocation_id: Option<String>,
    /// Another consumer for this call.
    pub consumer: Option<Consumer>,
}

impl Call {
    /// Names the instance.
    #[must_use]
    pub fn instance(mut self, instance: impl Into<String>) -> Call {
        self.instance_id = Some(instance.into());
        self
    }

    /// Sends this registration id.
    #[must_use]
    pub fn registration(mut self, registration_id: impl Into<String>) -> Call {
        self.registration_id = Some(registration_id.into());
        self
    }

    /// Sends this surface version hint.
    #[must_use]
    pub fn surface_version(mut self, version: impl Into<String>) -> Call {
        self.surface_version = Some(version.into());
        self
    }

    /// Sends confirmation evidence.
    #[must_use]
    pub fn confirmation(mut self, confirmation_id: impl Into<String>) -> Call {
        self.confirmation_id = Some(confirmation_id.into());
        self
    }

    /// Sets the invocation id.
    #[must_use]
    pub fn invocation_id(mut self, id: impl Into<String>) -> Call {
        self.invocation_id = Some(id.into());
        self
    }

    /// Calls as another consumer.
    #[must_use]
    pub fn consumer(mut self, consumer: Consumer) -> Call {
        self.consumer = Some(consumer);
        self
    }
}

/// A registry under test, seen by one consumer.
pub struct TestSurface {
    registry: Registry,
    host: Arc<RwLock<HostContext>>,
    clock: Arc<ManualClock>,
    consumer: RwLock<Consumer>,
    latest: Mutex<Option<Snapshot>>,
    events: Arc<Mutex<Vec<SurfaceEvent>>>,
    counter: std::sync::atomic::AtomicU64,
    _subscription: Subscription,
}

impl fmt::Debug for TestSurface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestSurface")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl Default for TestSurface {
    fn default() -> Self {
        TestSurface::new()
    }
}

impl TestSurface {
    /// A surface over a default registry.
    pub fn new() -> TestSurface {
        TestSurface::with(Registry::builder())
    }

    /// A surface over a registry built from `builder` (policies, limits,
    /// environment…). The harness installs its own host-context provider
    /// (see [`as_host`](Self::as_host)) and manual clock.
    pub fn with(builder: RegistryBuilder) -> TestSurface {
        let host = Arc::new(RwLock::new(HostContext::new()));
        let clock = Arc::new(ManualClock::at_ms(START_MS));
        let provider = Arc::clone(&host);
        let registry = builder
            .host_context(move || {
                provider
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
            })
            .clock(Arc::clone(&clock) as Arc<dyn crate::clock::Clock>)
            .approval_channel(TESTING_CHANNEL)
            .build();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        let subscription = registry.subscribe(move |event| {
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event.clone());
        });
        TestSurface {
            registry,
            host,
            clock,
            consumer: RwLock::new(Consumer::new(ConsumerKind::Test, "harness")),
            latest: Mutex::new(None),
            events,
            counter: std::sync::atomic::AtomicU64::new(0),
            _subscription: subscription,
        }
    }

    /// The registry: mount components on it.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The consumer calls are made as (`test:harness` by default).
    pub fn consumer(&self) -> Consumer {
        self.consumer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Calls (and snapshots) are made as `consumer` from now on.
    pub fn set_consumer(&self, consumer: Consumer) {
        *self
            .consumer
            .write()
            .unwrap_or_else(PoisonError::into_inner) = consumer;
    }

    /// Swaps the host context (the signed-in user, the tenant…): policies
    /// see it at the next discovery or call.
    pub fn as_host(&self, host: HostContext) {
        *self.host.write().unwrap_or_else(PoisonError::into_inner) = host;
    }

    /// The manual clock (starts at [`START_MS`]).
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// Advances the clock and expires what came due (confirmations).
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
        self.registry.confirmations().expire_due();
    }

    /// A snapshot for the consumer, remembered for registration ids.
    pub fn snapshot(&self) -> Snapshot {
        let snapshot = self
            .registry
            .snapshot(&SnapshotOptions::for_consumer(self.consumer()));
        let previous = self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(snapshot.clone());
        // Possibly the last owner of host objects: dropped unlocked.
        drop(previous);
        snapshot
    }

    /// The latest snapshot, refreshed when the surface moved since (as an
    /// adapter refreshes on `surface-changed`).
    fn latest(&self) -> Snapshot {
        let latest = self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match latest {
            Some(snapshot) if snapshot.surface_version() == self.registry.version() => snapshot,
            _ => self.snapshot(),
        }
    }

    /// Invokes with a fresh invocation id and the registration id of the
    /// latest snapshot (when it lists the capability once; the snapshot is
    /// refreshed when the surface moved). To test staleness, pass an old
    /// registration id in [`Call`] (see [`capture_ref`](Self::capture_ref)).
    pub async fn invoke(&self, capability_id: &str, input: Value) -> InvocationResult {
        self.invoke_with(capability_id, input, Call::default())
            .await
    }

    /// Invokes with explicit call parameters; unset ones are filled as
    /// [`invoke`](Self::invoke) does.
    pub async fn invoke_with(
        &self,
        capability_id: &str,
        input: Value,
        call: Call,
    ) -> InvocationResult {
        let mut request = Invocation::new(capability_id).input(input);
        let n = self
            .counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        request.invocation_id = Some(call.invocation_id.unwrap_or_else(|| format!("test-{n}")));
        request.instance_id = call.instance_id;
        request.registration_id = call
            .registration_id
            .or_else(|| self.registration_in_latest(capability_id, request.instance_id.as_deref()));
        request.surface_version = call.surface_version;
        request.confirmation_id = call.confirmation_id;
        let consumer = call.consumer.unwrap_or_else(|| self.consumer());
        self.registry
            .invoke(request, InvokeOptions::consumer(consumer))
            .await
    }

    fn registration_in_latest(
        &self,
        capability_id: &str,
        instance: Option<&str>,
    ) -> Option<String> {
        let snapshot = self.latest();
        let mut ids = snapshot
            .capabilities()
            .filter(|(component, capability)| {
                capability.id() == capability_id
                    && instance.is_none_or(|i| component.instance_id() == i)
            })
            .map(|(component, _)| component.registration_id().to_owned())
            .chain(
                snapshot
                    .procedure(capability_id)
                    .filter(|p| instance.is_none_or(|i| p.instance_id() == i))
                    .map(|p| p.registration_id().to_owned()),
            );
        match (ids.next(), ids.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// Reads an observation into `T`. Fails on an error result, an output
    /// of another shape, or a surface version that moved during the read.
    pub async fn observe<T: DeserializeOwned>(
        &self,
        capability_id: &str,
    ) -> Result<T, ObserveError> {
        let before = self.registry.version();
        let result = self.invoke(capability_id, Value::Object(Map::new())).await;
        let after = self.registry.version();
        if before != after {
            return Err(ObserveError::SurfaceMoved { before, after });
        }
        match result.into_outcome() {
            Ok(output) => serde_json::from_value(output.unwrap_or(Value::Null))
                .map_err(|err| ObserveError::Type(err.to_string())),
            Err(error) => Err(ObserveError::Failed(error)),
        }
    }

    /// The registration and version a capability is offered under now.
    pub fn capture_ref(&self, capability_id: &str) -> Option<CapturedRef> {
        let snapshot = self.snapshot();
        let registration_id = self.registration_in_latest(capability_id, None)?;
        Some(CapturedRef {
            registration_id,
            surface_version: snapshot.surface_version().to_string(),
        })
    }

    /// How a capability (or procedure) appears to the consumer now.
    pub fn exposure(&self, capability_id: &str) -> Exposure {
        let snapshot = self.snapshot();
        if let Some((_, capability)) = snapshot.capability(capability_id) {
            return match capability.unavailable_reason() {
                Some(reason) => Exposure::Unavailable(reason.to_owned()),
                None => Exposure::Exposed,
            };
        }
        match snapshot.procedure(capability_id).next() {
            Some(procedure) => match procedure.unavailable_reason() {
                Some(reason) => Exposure::Unavailable(reason.to_owned()),
                None => Exposure::Exposed,
            },
            None => Exposure::NotExposed,
        }
    }

    /// Asserts the capability is listed and available.
    #[track_caller]
    pub fn assert_exposed(&self, capability_id: &str) {
        let exposure = self.exposure(capability_id);
        assert!(
            exposure == Exposure::Exposed,
            "expected `{capability_id}` to be exposed and available, but it is {exposure:?}"
        );
    }

    /// Asserts the capability is listed but unavailable, with `reason` when given.
    #[track_caller]
    pub fn assert_unavailable(&self, capability_id: &str, reason: Option<&str>) {
        match self.exposure(capability_id) {
            Exposure::Unavailable(shown) => {
                if let Some(reason) = reason {
                    assert_eq!(
                        shown, reason,
                        "`{capability_id}` is unavailable for another reason"
                    );
                }
            }
            other => panic!(
                "expected `{capability_id}` to be listed as unavailable, but it is {other:?}"
            ),
        }
    }

    /// Asserts the capability is not listed at all.
    #[track_caller]
    pub fn assert_not_exposed(&self, capability_id: &str) {
        let exposure = self.exposure(capability_id);
        assert!(
            exposure == Exposure::NotExposed,
            "expected `{capability_id}` to be hidden, but it is {exposure:?}"
        );
    }

    /// Requests waiting for the user.
    pub fn pending(&self) -> Vec<PendingConfirmation> {
        self.registry.confirmations().pending()
    }

    /// Approves a pending request as the person would: the harness shows
    /// the pending record of `confirmation_id` and answers it through its
    /// in-app channel [`TESTING_CHANNEL`], approver `person`.
    pub fn approve(&self, confirmation_id: &str) -> Result<Resolution, ResolveError> {
        self.answer(confirmation_id, true)
    }

    /// Denies a pending request (see [`approve`](Self::approve)).
    pub fn deny(&self, confirmation_id: &str) -> Result<Resolution, ResolveError> {
        self.answer(confirmation_id, false)
    }

    fn answer(&self, confirmation_id: &str, approved: bool) -> Result<Resolution, ResolveError> {
        let confirmations = self.registry.confirmations();
        let Some(shown) = confirmations.find(confirmation_id).map(|p| p.shown()) else {
            return Err(match confirmations.resolution(confirmation_id) {
                Some(_) => ResolveError::NotPending,
                None => ResolveError::Unknown,
            });
        };
        let approver = confirmations
            .approver(TESTING_CHANNEL, "person")
            .map_err(|_| ResolveError::NotPermitted)?;
        confirmations.resolve(&shown, approved, &approver)
    }

    /// Lets a pending request expire: advances the clock past its TTL.
    pub fn expire(&self, confirmation_id: &str) {
        let _ = confirmation_id;
        let ttl = self.registry.limits().confirmation_ttl;
        self.advance(ttl + Duration::from_millis(1));
    }

    /// Every event since the harness was created, in order.
    pub fn events(&self) -> Vec<SurfaceEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The default audit sink's records.
    pub fn audit_log(&self) -> Vec<AuditEvent> {
        self.registry.audit_log()
    }

    /// The snapshot with its volatility normalized: registration ids become
    /// `<reg#1>`, `<reg#2>`… in order of first appearance; `surfaceId`,
    /// `capturedAt` and `surfaceVersion` are dropped; keys are sorted;
    /// schemas are kept verbatim.
    pub fn semantic_snapshot(&self) -> Value {
        semantic(&self.snapshot().to_json(), false)
    }

    /// [`semantic_snapshot`](Self::semantic_snapshot) keeping `surfaceVersion`.
    pub fn semantic_snapshot_with_version(&self) -> Value {
        semantic(&self.snapshot().to_json(), true)
    }
}

/// Normalizes a snapshot document (see [`TestSurface::semantic_snapshot`]).
pub fn semantic(snapshot: &Value, keep_version: bool) -> Value {
    let mut seen: Vec<String> = Vec::new();
    let mut value = snapshot.clone();
    if let Value::Object(map) = &mut value {
        map.remove("surfaceId");
        map.remove("capturedAt");
        if !keep_version {
            map.remove("surfaceVersion");
        }
    }
    rename_registrations(&mut value, &mut seen);
    value
}

fn rename_registrations(value: &mut Value, seen: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                let is_id = matches!(key.as_str(), "registrationId" | "liveRegistrationId");
                match child {
                    Value::String(id) if is_id => {
                        let n = match seen.iter().position(|s| s == id) {
                            Some(i) => i + 1,
                            None => {
                                seen.push(id.clone());
                                seen.len()
                            }
                        };
                        *child = Value::String(format!("<reg#{n}>"));
                    }
                    // Schemas are verbatim.
                    _ if matches!(key.as_str(), "inputSchema" | "outputSchema") => {}
                    _ => rename_registrations(child, seen),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rename_registrations(item, seen);
            }
        }
        _ => {}
    }
}
