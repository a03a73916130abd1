//! Registry configuration: the limits with the specification's defaults,
//! the duplicate and suffix policies, the registration guard, and the
//! builder that assembles a registry.

use super::{ClockSlot, Registry, Services, State};

use rustc_hash::FxHashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};

use serde::Serialize;

use super::Limits;
use super::registration::Chain;

use crate::audit::{AuditSink, ConsoleAuditSink, MemoryAuditSink};
use crate::clock::Clock;
use crate::confirmation::ConfirmationStore;
use crate::context::{Environment, HostContext};
use crate::events::Dispatcher;
use crate::ids::CapabilityId;
use crate::policy::PolicyRef;
use crate::primitives::concurrency::Admission;
use crate::procedure::ProcedureError;
use crate::util::id_mint::IdMint;

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
#[non_exhaustive]
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

/// The route a snapshot reports (the host wires its router here):
/// [`RouteInfo::new`] and [`RouteInfo::param`] per route parameter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RouteInfo {
    /// The current path.
    pub path: String,
    /// Route parameters.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub params: std::collections::BTreeMap<String, String>,
}

impl RouteInfo {
    /// The route at `path`, without parameters.
    pub fn new(path: impl Into<String>) -> RouteInfo {
        RouteInfo {
            path: path.into(),
            params: std::collections::BTreeMap::new(),
        }
    }

    /// Adds the route parameter `name` = `value`.
    #[must_use]
    pub fn param(mut self, name: impl Into<String>, value: impl Into<String>) -> RouteInfo {
        self.params.insert(name.into(), value.into());
        self
    }
}

type HostProvider = Arc<dyn Fn() -> HostContext + Send + Sync>;
type Guard = Arc<dyn Fn(&RegistrationCandidate<'_>) -> GuardDecision + Send + Sync>;
type RouteProvider = Arc<dyn Fn() -> Option<RouteInfo> + Send + Sync>;
type Redactor = Arc<dyn Fn(&serde_json::Value) -> serde_json::Value + Send + Sync>;
type ErrorHook =
    Arc<dyn Fn(&str, &ProcedureError) -> Option<crate::error::ErrorPayload> + Send + Sync>;

/// Builds a [`Registry`].
#[must_use]
#[derive(Default)]
pub struct RegistryBuilder {
    pub(super) environment: Environment,
    pub(super) host: Option<HostProvider>,
    pub(super) policies: Vec<PolicyRef>,
    pub(super) audit: Option<Arc<dyn AuditSink>>,
    pub(super) guard: Option<Guard>,
    pub(super) duplicates: DuplicatePolicy,
    pub(super) suffixes: SuffixPolicy,
    pub(super) route: Option<RouteProvider>,
    /// `None`: the defaults.
    pub(super) limits: Option<Limits>,
    pub(super) clock: Option<Arc<dyn Clock>>,
    pub(super) redact: Option<Redactor>,
    pub(super) procedure_errors: Option<ErrorHook>,
    pub(super) expected_manifest: Option<Box<str>>,
    pub(super) approval_channels: Vec<crate::confirmation::ApprovalChannel>,
    pub(super) presence: Option<crate::confirmation::PresenceRequirement>,
    pub(super) presenter: Option<crate::confirmation::Presenter>,
    pub(super) shared: Option<crate::store::Attached>,
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
        self.limits = Some(limits);
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
    /// use agent_surface::error::Origin;
    /// use agent_surface::{ErrorPayload, Registry};
    ///
    /// let registry = Registry::builder()
    ///     .procedure_errors(|_procedure, error| match error.code() {
    ///         Some("forbidden") => Some(ErrorPayload::not_authorized(Origin::Server)),
    ///         _ => None,
    ///     })
    ///     .build();
    /// # let _ = registry;
    /// ```
    pub fn procedure_errors(
        mut self,
        map: impl Fn(&str, &ProcedureError) -> Option<crate::error::ErrorPayload>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.procedure_errors = Some(Arc::new(map));
        self
    }

    /// Pins the catalog manifest hash this registry was reviewed against
    /// (see [`Registry::manifest_hash`]): when the binary's catalog has a
    /// different one, every mount fails with [`MountError::StaleManifest`](super::MountError::StaleManifest).
    pub fn expect_manifest(mut self, manifest_hash: impl Into<Box<str>>) -> Self {
        self.expected_manifest = Some(manifest_hash.into());
        self
    }

    /// Pins this registry to the committed contract artifact (the
    /// `agent-surface.contract.json` that `cargo agent-surface snapshot`
    /// writes and review approves): its manifest hash becomes the one
    /// [`expect_manifest`](Self::expect_manifest) pins, so a binary whose
    /// catalog drifted from what was reviewed mounts nothing. Compile the
    /// file in: `.expect_artifact(include_str!("../agent-surface.contract.json"))`.
    ///
    /// An artifact that cannot be read — not JSON, another format, no
    /// manifest hash, over 8 MiB — pins nothing a catalog can match: every
    /// mount fails closed with [`MountError::StaleManifest`](super::MountError::StaleManifest),
    /// whose `expected` says why.
    ///
    /// ```
    /// use agent_surface::registry::{MountError, Registry};
    ///
    /// let registry = Registry::builder()
    ///     // In an application: include_str!("../agent-surface.contract.json")
    ///     .expect_artifact(r#"{
    ///         "format": "agent-surface.contract/1",
    ///         "manifestHash": "6bdfc672133a849a4f3810dca968c8c4bededc9e8c0dafc190af4bc808dc8a21"
    ///     }"#)
    ///     .build();
    /// # let _ = registry;
    /// ```
    pub fn expect_artifact(self, artifact: &str) -> Self {
        let pinned = match crate::catalog::artifact_manifest_hash(artifact) {
            Ok(hash) => hash,
            Err(why) => format!("(an unreadable contract artifact: {why})"),
        };
        self.expect_manifest(pinned)
    }

    /// Declares an in-app approval channel: a UI of the host's own through
    /// which the person answers confirmations (a page's dialog, a desktop
    /// prompt). Answer through it with
    /// [`Confirmations::approver`](crate::confirmation::Confirmations::approver);
    /// every answer is recorded with its channel. Adapters that could ask
    /// the agent's own client instead (MCP elicitation) keep that off by
    /// default on a registry with an in-app channel.
    pub fn approval_channel(mut self, name: &str) -> Self {
        self.approval_channels
            .push(crate::confirmation::ApprovalChannel::in_app(name));
        self
    }

    /// How confirmations are presented to the person: turns a request into
    /// a title naming the action and its objects in the person's terms
    /// (names, not ids; counts), the approving button's label and the
    /// effect in plain words. Runs once per new request, outside every
    /// lock; `None` or a panic presents the capability's description. What
    /// it returns is escaped and cut like the summary.
    pub fn confirmation_presenter(
        mut self,
        present: impl Fn(
            &crate::confirmation::PresentationRequest<'_>,
        ) -> Option<crate::confirmation::Presentation>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.presenter = Some(Arc::new(present));
        self
    }

    /// Requires proof that the person approved — not a script in their
    /// page, an extension or a browser agent — for every request `rule`
    /// covers ([`PresenceRule::destructive_or_irreversible`](crate::confirmation::PresenceRule::destructive_or_irreversible)
    /// is the usual one): such a request is approved only through
    /// [`Confirmations::approve_with_presence`](crate::confirmation::Confirmations::approve_with_presence)
    /// with a proof `verifier` accepts for exactly that request (a passkey
    /// assertion with user verification, an out-of-band code), and every
    /// other approval of it is refused
    /// ([`ResolveError::PresenceRequired`](crate::confirmation::ResolveError::PresenceRequired)).
    /// Pending requests say whether they need it
    /// ([`PendingConfirmation::presence_required`](crate::confirmation::PendingConfirmation::presence_required)).
    ///
    /// ```
    /// use agent_surface::confirmation::{
    ///     PresenceChallenge, PresenceRefusal, PresenceRule, PresenceVerifier, VerifiedPresence,
    /// };
    /// use agent_surface::Registry;
    ///
    /// struct NoAuthenticator;
    /// impl PresenceVerifier for NoAuthenticator {
    ///     fn verify(
    ///         &self,
    ///         _: &PresenceChallenge,
    ///         _: &str,
    ///         _: &serde_json::Value,
    ///     ) -> Result<VerifiedPresence, PresenceRefusal> {
    ///         Err(PresenceRefusal::NotRegistered)
    ///     }
    /// }
    ///
    /// let registry = Registry::builder()
    ///     .approval_channel("console")
    ///     .require_presence(PresenceRule::destructive_or_irreversible(), NoAuthenticator)
    ///     .build();
    /// # let _ = registry;
    /// ```
    pub fn require_presence(
        mut self,
        rule: crate::confirmation::PresenceRule,
        verifier: impl crate::confirmation::PresenceVerifier,
    ) -> Self {
        self.presence = Some(crate::confirmation::PresenceRequirement {
            rule,
            verifier: Arc::new(verifier),
        });
        self
    }

    /// Shares this registry's at-most-once window, rate-limit buckets and
    /// audit with every other registry (a replica of the same surface, in
    /// another process or this one) on `store` under `namespace`: see
    /// [`store`](crate::store) for what holds across replicas, what the
    /// store's failure does (calls fail closed) and what it costs. Without
    /// it (the default) all of that stays in this process, at no cost.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_surface::Registry;
    /// use agent_surface::store::{MemoryStore, Namespace};
    ///
    /// let registry = Registry::builder()
    ///     .shared_store(Arc::new(MemoryStore::new()), Namespace::new("devices").unwrap())
    ///     .build();
    /// # let _ = registry;
    /// ```
    pub fn shared_store(
        mut self,
        store: Arc<dyn crate::store::SharedStore>,
        namespace: crate::store::Namespace,
    ) -> Self {
        self.shared = Some(crate::store::Attached { store, namespace });
        self
    }

    /// Builds the registry.
    pub fn build(self) -> Registry {
        // Creating a registry allocates its shared state and nothing else
        // (see `Services`): registries are created per request and per test.
        let (audit, memory_on): (Option<Arc<dyn AuditSink>>, bool) =
            match (self.audit, self.environment) {
                (Some(sink), _) => (Some(sink), false),
                (None, Environment::Development) => (Some(Arc::new(ConsoleAuditSink)), true),
                (None, _) => (None, true),
            };
        let clock = match self.clock {
            Some(clock) => ClockSlot::Custom(crate::clock::Monotonic::new(clock)),
            None => ClockSlot::default_clock(),
        };
        // A registry built with every default shares one configuration
        // (most registries: one per request, one per test).
        let all_default = self.environment == Environment::default()
            && self.host.is_none()
            && self.policies.is_empty()
            && self.guard.is_none()
            && self.duplicates == DuplicatePolicy::default()
            && self.suffixes == SuffixPolicy::default()
            && self.route.is_none()
            && self.limits.is_none_or(|limits| limits == Limits::default())
            && self.redact.is_none()
            && self.procedure_errors.is_none()
            && self.expected_manifest.is_none()
            && self.approval_channels.is_empty()
            && self.presenter.is_none()
            && self.presence.is_none()
            && self.shared.is_none();
        let config = if all_default {
            ConfigRef::Defaults(&shared_defaults().config)
        } else {
            let base_chain = if self.policies.is_empty() {
                Arc::clone(&shared_defaults().config.base_chain)
            } else {
                Arc::new(Chain::compose(&self.policies, &[], Vec::new()))
            };
            ConfigRef::Own(Arc::new(Config {
                base_chain,
                environment: self.environment,
                host: self.host,
                policies: self.policies,
                guard: self.guard,
                duplicates: self.duplicates,
                suffixes: self.suffixes,
                route: self.route,
                limits: self.limits.map(Limits::bounded).unwrap_or_default(),
                redact: self.redact,
                procedure_errors: self.procedure_errors,
                expected_manifest: self.expected_manifest,
                approval_channels: self.approval_channels,
                presenter: self.presenter,
                presence: self.presence,
                shared: self.shared,
            }))
        };
        let limits = &config.limits;
        let tombstone_bounds = (
            limits.tombstone_size,
            crate::util::millis::millis(limits.tombstone_ttl),
        );
        let max_pending_confirmations = limits.max_pending_confirmations;
        let audit_buffer = limits.audit_buffer;
        // Built in its allocation (`new_cyclic` allocates first): `Arc::new`
        // would build the 600-byte state on the stack and copy it over.
        let registry = Registry {
            inner: Arc::new_cyclic(|_| Services {
                surface_id: LazyLock::new(|| Arc::from(crate::util::id_mint::surface_id())),
                config,
                clock,
                ids: IdMint::new(),
                state: Mutex::new(State {
                    version: 0,
                    live: FxHashMap::default(),
                    by_type: FxHashMap::default(),
                    ordered: None,
                    recent: None,
                    tombstone_bounds,
                    known_procedures: Vec::new(),
                    by_procedure: FxHashMap::default(),
                }),
                executor: std::sync::RwLock::new(None),
                dispatcher: LazyLock::new(|| Arc::new(Dispatcher::default())),
                audit,
                memory_on,
                memory_audit: MemoryAuditSink::new(audit_buffer),
                dedupe: std::sync::OnceLock::new(),
                confirmations: ConfirmationStore::new(max_pending_confirmations),
                admission: LazyLock::new(|| Arc::new(Admission::default())),
                disposed: crate::util::disposal::Disposal::default(),
                version_tx: std::sync::OnceLock::new(),
                version: std::sync::atomic::AtomicU64::new(0),
                empty_host: &shared_defaults().host,
                anonymous: &shared_defaults().anonymous,
            }),
        };
        // Replicas relay their confirmations through the shared store.
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        if registry.inner.config.shared.is_some() {
            let services = Arc::clone(&registry.inner) as Arc<dyn crate::confirmation::StoreOwner>;
            if !crate::confirmation::start_relay(&services) {
                tracing::warn!(
                    "a registry with a shared store was built outside a tokio runtime: its \
                     confirmations are not relayed to the other replicas"
                );
            }
        }
        registry
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
    pub(crate) expected_manifest: Option<Box<str>>,
    pub(crate) approval_channels: Vec<crate::confirmation::ApprovalChannel>,
    pub(crate) presenter: Option<crate::confirmation::Presenter>,
    pub(crate) presence: Option<crate::confirmation::PresenceRequirement>,
    /// The shared store, when the registry has replicas.
    pub(crate) shared: Option<crate::store::Attached>,
    /// The registry's own policy chain, shared by registrations that add
    /// none (and by every registry without policies).
    pub(crate) base_chain: Arc<Chain>,
}

/// A registry's configuration: the process-wide defaults, borrowed (no
/// reference count to touch when a registry is built or dropped), or its
/// own.
pub(crate) enum ConfigRef {
    /// Every registry built with the defaults.
    Defaults(&'static Config),
    /// A registry built with any setting of its own.
    Own(Arc<Config>),
}

impl std::ops::Deref for ConfigRef {
    type Target = Config;

    fn deref(&self) -> &Config {
        match self {
            ConfigRef::Defaults(config) => config,
            ConfigRef::Own(config) => config,
        }
    }
}

/// Immutable values every registry starts with, built once per process.
struct SharedDefaults {
    /// The configuration of a registry built with every default.
    config: Config,
    host: HostContext,
    anonymous: crate::context::Consumer,
}

fn shared_defaults() -> &'static SharedDefaults {
    static DEFAULTS: std::sync::OnceLock<SharedDefaults> = std::sync::OnceLock::new();
    DEFAULTS.get_or_init(|| SharedDefaults {
        config: Config {
            environment: Environment::default(),
            host: None,
            policies: Vec::new(),
            guard: None,
            duplicates: DuplicatePolicy::default(),
            suffixes: SuffixPolicy::default(),
            route: None,
            limits: Limits::default(),
            redact: None,
            procedure_errors: None,
            expected_manifest: None,
            approval_channels: Vec::new(),
            presenter: None,
            presence: None,
            shared: None,
            base_chain: Arc::new(Chain::compose(&[], &[], Vec::new())),
        },
        host: HostContext::default(),
        anonymous: crate::context::Consumer::anonymous(),
    })
}
