//! Policies: who may see and call what. Attach the built-ins
//! ([`authenticated`], [`has_permission`], …) to a registry, component or
//! capability, or implement [`Policy`] for your own rules.
//!
//! A policy has a name and up to three hooks:
//! - [`on_discovery`](Policy::on_discovery): synchronous, cheap, side-effect
//!   free; decides whether a capability is exposed, visible but disabled, or
//!   hidden for a consumer (most restrictive wins across the chain);
//! - [`on_authorize`](Policy::on_authorize): phase 4 of an invocation, async,
//!   an onion around the rest of the chain; it sees **no agent input** — the
//!   context type has none;
//! - [`on_invoke`](Policy::on_invoke): phase 6, async, an onion; it sees only
//!   the validated effective input, and may require confirmation or enrich
//!   the audit record.
//!
//! Chains compose registry → component → capability; onions wrap with the
//! registry's policies outermost. A hook denies by returning an
//! [`ErrorPayload`]. Policies never rewrite input.
//!
//! # Example
//! ```
//! use agent_surface::policy::{Decision, Policy, PolicyContext};
//!
//! /// Hides every capability from consumers without the `beta` grant.
//! struct BetaOnly;
//!
//! impl Policy for BetaOnly {
//!     fn name(&self) -> &str {
//!         "betaOnly"
//!     }
//!     fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
//!         if ctx.consumer().grants().iter().any(|g| g == "beta") {
//!             Decision::Expose
//!         } else {
//!             Decision::Hide
//!         }
//!     }
//! }
//! ```

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::audit::AuditSink;
use crate::clock::Clock;
use crate::context::{Consumer, Environment, HostContext};
use crate::error::ErrorPayload;
use crate::ids::CapabilityId;
use crate::internal_meta::Internal;
use agent_surface_rules::{Effect, Kind, Plane};

/// A boxed, `Send` future borrowing for `'a`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The result of a policy hook: continue, or deny with an agent-facing error.
pub type PolicyResult = Result<(), ErrorPayload>;

/// A shared policy, as chains hold them.
pub type PolicyRef = Arc<dyn Policy>;

/// What a policy decides at discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Show the capability.
    Expose,
    /// Show it as unavailable, with a reason that teaches the enabling step.
    Disable(Cow<'static, str>),
    /// Do not show it at all (indistinguishable from nonexistent).
    Hide,
}

impl Decision {
    /// Combines two decisions, most restrictive first: any hide hides, else
    /// the first disable wins, else expose.
    pub fn and(self, other: Decision) -> Decision {
        match (self, other) {
            (Decision::Hide, _) | (_, Decision::Hide) => Decision::Hide,
            (Decision::Disable(reason), _) | (Decision::Expose, Decision::Disable(reason)) => {
                Decision::Disable(reason)
            }
            (Decision::Expose, Decision::Expose) => Decision::Expose,
        }
    }
}

/// Which hooks a policy implements, so the pipeline can skip pass-throughs:
/// [`Hooks::ALL`] or [`Hooks::NONE`] and a chainable setter per hook.
///
/// ```
/// use agent_surface::policy::Hooks;
///
/// const GATE: Hooks = Hooks::NONE.discovery(true).authorize(true);
/// assert!(!GATE.invoke);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hooks {
    /// Implements [`Policy::on_discovery`].
    pub discovery: bool,
    /// Implements [`Policy::on_authorize`].
    pub authorize: bool,
    /// Implements [`Policy::on_invoke`].
    pub invoke: bool,
}

impl Hooks {
    /// Every hook.
    pub const ALL: Hooks = Hooks {
        discovery: true,
        authorize: true,
        invoke: true,
    };

    /// No hook (a policy that only names itself).
    pub const NONE: Hooks = Hooks {
        discovery: false,
        authorize: false,
        invoke: false,
    };

    /// Sets whether [`Policy::on_discovery`] is implemented.
    #[must_use]
    pub const fn discovery(mut self, implemented: bool) -> Hooks {
        self.discovery = implemented;
        self
    }

    /// Sets whether [`Policy::on_authorize`] is implemented.
    #[must_use]
    pub const fn authorize(mut self, implemented: bool) -> Hooks {
        self.authorize = implemented;
        self
    }

    /// Sets whether [`Policy::on_invoke`] is implemented.
    #[must_use]
    pub const fn invoke(mut self, implemented: bool) -> Hooks {
        self.invoke = implemented;
        self
    }
}

/// Where a policy is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Registry-wide (outermost).
    Registry,
    /// Every capability of one component.
    Component,
    /// One capability (innermost).
    Capability,
}

/// What discovery and authorization know about a call. There is no agent
/// input here, by construction.
pub struct PolicyContext<'a> {
    pub(crate) capability_id: &'a CapabilityId,
    pub(crate) kind: Kind,
    pub(crate) effect: Effect,
    pub(crate) registration_id: &'a str,
    pub(crate) consumer: &'a Consumer,
    pub(crate) host: &'a HostContext,
    pub(crate) environment: Environment,
    pub(crate) component_meta: Option<&'a Map<String, Value>>,
    pub(crate) capability_meta: Option<&'a Map<String, Value>>,
    pub(crate) component_internal: Option<&'a Internal>,
    pub(crate) capability_internal: Option<&'a Internal>,
    pub(crate) clock: &'a dyn Clock,
    /// The registry's shared store, when its replicas share one.
    pub(crate) shared: Option<&'a crate::store::Attached>,
}

impl<'a> PolicyContext<'a> {
    /// A context for unit-testing a policy; the registry builds its own.
    pub fn new(
        capability_id: &'a CapabilityId,
        kind: Kind,
        effect: Effect,
        consumer: &'a Consumer,
        host: &'a HostContext,
        clock: &'a dyn Clock,
    ) -> PolicyContext<'a> {
        PolicyContext {
            capability_id,
            kind,
            effect,
            registration_id: "",
            consumer,
            host,
            environment: Environment::Production,
            component_meta: None,
            capability_meta: None,
            component_internal: None,
            capability_internal: None,
            clock,
            shared: None,
        }
    }

    /// Sets the registration id.
    #[must_use]
    pub fn with_registration(mut self, registration_id: &'a str) -> Self {
        self.registration_id = registration_id;
        self
    }

    /// Sets the environment.
    #[must_use]
    pub fn with_environment(mut self, environment: Environment) -> Self {
        self.environment = environment;
        self
    }

    /// The capability.
    pub fn capability_id(&self) -> &CapabilityId {
        self.capability_id
    }
    /// The plane.
    pub fn plane(&self) -> Plane {
        self.capability_id.plane()
    }
    /// Observation, action or procedure.
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// The declared effect.
    pub fn effect(&self) -> Effect {
        self.effect
    }
    /// The registration (`reg_…`).
    pub fn registration_id(&self) -> &str {
        self.registration_id
    }
    /// Who is asking.
    pub fn consumer(&self) -> &Consumer {
        self.consumer
    }
    /// The host application's context.
    pub fn host(&self) -> &HostContext {
        self.host
    }
    /// The registry's environment.
    pub fn environment(&self) -> Environment {
        self.environment
    }
    /// The component's agent-visible metadata.
    pub fn component_meta(&self) -> Option<&Map<String, Value>> {
        self.component_meta
    }
    /// The capability's agent-visible metadata.
    pub fn capability_meta(&self) -> Option<&Map<String, Value>> {
        self.capability_meta
    }
    /// The component's internal metadata (never serialized).
    pub fn component_internal(&self) -> Option<&Internal> {
        self.component_internal
    }
    /// The capability's internal metadata (never serialized).
    pub fn capability_internal(&self) -> Option<&Internal> {
        self.capability_internal
    }
    /// The registry's clock, in epoch milliseconds. Policies read time only here.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }
}

impl fmt::Debug for PolicyContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyContext")
            .field("capability_id", &self.capability_id)
            .field("consumer", &self.consumer)
            .finish_non_exhaustive()
    }
}

/// What `on_invoke` hooks may ask of the pipeline.
#[derive(Debug, Default)]
pub struct InvokeEffects {
    confirmation: Option<Option<String>>,
    audit: Map<String, Value>,
}

impl InvokeEffects {
    /// Whether a policy required confirmation, and the summary it gave.
    pub fn confirmation(&self) -> Option<Option<&str>> {
        self.confirmation.as_ref().map(Option::as_deref)
    }
    /// Audit annotations added by policies.
    pub fn audit(&self) -> &Map<String, Value> {
        &self.audit
    }
}

/// What `on_invoke` knows: the policy context plus the invocation id and the
/// validated effective input.
pub struct InvokeContext<'a> {
    pub(crate) policy: &'a PolicyContext<'a>,
    pub(crate) invocation_id: &'a str,
    pub(crate) effective_input: &'a Value,
    pub(crate) effects: Mutex<InvokeEffects>,
}

impl<'a> InvokeContext<'a> {
    /// A context for unit-testing a policy; the registry builds its own.
    pub fn new(
        policy: &'a PolicyContext<'a>,
        invocation_id: &'a str,
        effective_input: &'a Value,
    ) -> Self {
        InvokeContext {
            policy,
            invocation_id,
            effective_input,
            effects: Mutex::new(InvokeEffects::default()),
        }
    }

    /// The invocation id.
    pub fn invocation_id(&self) -> &str {
        self.invocation_id
    }

    /// The validated effective input (agent input merged with bound values).
    pub fn effective_input(&self) -> &Value {
        self.effective_input
    }

    /// Escalates the call to require the user's confirmation.
    pub fn require_confirmation(&self, summary: Option<String>) {
        if let Ok(mut effects) = self.effects.lock() {
            match &mut effects.confirmation {
                Some(existing) => {
                    if existing.is_none() {
                        *existing = summary;
                    }
                }
                None => effects.confirmation = Some(summary),
            }
        }
    }

    /// Adds a key to the invocation's audit record.
    pub fn annotate_audit(&self, key: impl Into<String>, value: Value) {
        // The key's conversion is the caller's code: done before the lock.
        let key = key.into();
        if let Ok(mut effects) = self.effects.lock() {
            effects.audit.insert(key, value);
        }
    }

    /// Takes what the hooks asked for.
    pub fn into_effects(self) -> InvokeEffects {
        self.effects.into_inner().unwrap_or_default()
    }
}

impl<'a> std::ops::Deref for InvokeContext<'a> {
    type Target = PolicyContext<'a>;
    fn deref(&self) -> &PolicyContext<'a> {
        self.policy
    }
}

impl fmt::Debug for InvokeContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InvokeContext")
            .field("capability_id", &self.policy.capability_id)
            .field("invocation_id", &self.invocation_id)
            .finish_non_exhaustive()
    }
}

/// The rest of an onion chain. Call [`run`](Next::run) to continue; skip it
/// to stop the call (returning an error).
pub struct Next<'a, C: ?Sized> {
    chain: &'a [PolicyRef],
    ctx: &'a C,
    hook: Hook<'a, C>,
}

type Hook<'a, C> = fn(&'a dyn Policy, &'a C, Next<'a, C>) -> BoxFuture<'a, PolicyResult>;

impl<'a, C: ?Sized + Sync> Next<'a, C> {
    /// Runs the rest of the chain.
    pub fn run(self) -> BoxFuture<'a, PolicyResult> {
        match self.chain.split_first() {
            None => Box::pin(std::future::ready(Ok(()))),
            Some((first, rest)) => {
                let next = Next {
                    chain: rest,
                    ctx: self.ctx,
                    hook: self.hook,
                };
                let hook = self.hook;
                let ctx = self.ctx;
                // A hook that panics before returning its future: the panic
                // moves into the future, where the pipeline contains it like
                // any other policy panic (the call is refused).
                crate::util::contain::catch(|| hook(&**first, ctx, next)).unwrap_or_else(|panic| {
                    // Its payload is disposed of; its message moves on.
                    Box::pin(async move { std::panic::resume_unwind(Box::new(panic.message)) })
                })
            }
        }
    }
}

/// Runs the `on_authorize` onion of `chain` (outermost first).
pub fn run_authorize<'a>(
    chain: &'a [PolicyRef],
    ctx: &'a PolicyContext<'a>,
) -> BoxFuture<'a, PolicyResult> {
    Next {
        chain,
        ctx,
        hook: |policy, ctx, next| policy.on_authorize(ctx, next),
    }
    .run()
}

/// Runs the `on_invoke` onion of `chain` (outermost first).
pub fn run_invoke<'a>(
    chain: &'a [PolicyRef],
    ctx: &'a InvokeContext<'a>,
) -> BoxFuture<'a, PolicyResult> {
    Next {
        chain,
        ctx,
        hook: |policy, ctx, next| policy.on_invoke(ctx, next),
    }
    .run()
}

/// A policy. Implement the hooks you need; the others pass through.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a policy",
    label = "expected a value implementing `Policy`",
    note = "use a built-in from `agent_surface::policy` or a type implementing `Policy`"
)]
pub trait Policy: Send + Sync + 'static {
    /// The name reviewers see in the catalog and the explain view, such as
    /// `hasPermission(devices:write)`.
    fn name(&self) -> &str;

    /// Which hooks this policy implements. The default says all; narrowing it
    /// lets the pipeline skip pass-through hooks.
    fn hooks(&self) -> Hooks {
        Hooks::ALL
    }

    /// Decides visibility for a consumer. Synchronous, cheap, side-effect free.
    fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
        let _ = ctx;
        Decision::Expose
    }

    /// Phase 4: pre-input authority. Call `next.run().await` to continue.
    fn on_authorize<'a>(
        &'a self,
        ctx: &'a PolicyContext<'a>,
        next: Next<'a, PolicyContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        let _ = ctx;
        next.run()
    }

    /// An audit sink this policy forwards the capability's audit events to
    /// (the built-in `audit` policy).
    fn audit_sink(&self) -> Option<Arc<dyn AuditSink>> {
        None
    }

    /// Phase 6: sees the validated effective input. Call `next.run().await`
    /// to continue.
    fn on_invoke<'a>(
        &'a self,
        ctx: &'a InvokeContext<'a>,
        next: Next<'a, InvokeContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        let _ = ctx;
        next.run()
    }

    /// The policy's identity, for catalogs and contract hashes. Sealed:
    /// only `agent_surface`'s built-ins describe themselves; every other
    /// policy is identified by its Rust type. Read it with [`identity`].
    #[doc(hidden)]
    fn __identity(&self, _: policy_identity::seal::Token) -> PolicyIdentity {
        let name = crate::util::contain::contained("policy name", || self.name().to_owned())
            .unwrap_or_else(|| "<unnamed policy>".to_owned());
        PolicyIdentity::custom(std::any::type_name::<Self>(), &name)
    }
}

/// The stable identity of `policy`: a built-in's name and parameters, or a
/// custom policy's Rust type and name (see [`PolicyIdentity`]).
pub fn identity(policy: &dyn Policy) -> PolicyIdentity {
    crate::util::contain::contained("policy identity", || {
        policy.__identity(policy_identity::seal::Token(()))
    })
    .unwrap_or_else(|| PolicyIdentity::custom("<unknown>", "<unnamed policy>"))
}

impl fmt::Debug for dyn Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Policy({})", name_of(self))
    }
}

/// A policy's name for reviewers and logs; a panicking `name()` is
/// contained and shows as `<unnamed policy>`.
pub(crate) fn name_of(policy: &dyn Policy) -> std::borrow::Cow<'_, str> {
    crate::util::contain::contained("policy name", || policy.name()).map_or(
        std::borrow::Cow::Borrowed("<unnamed policy>"),
        std::borrow::Cow::Borrowed,
    )
}

/// Converts a policy value into a shared reference (used by the macros'
/// `policies = [...]`).
pub fn policy<P: Policy>(policy: P) -> PolicyRef {
    Arc::new(policy)
}

/// `policy` as a macro declared it: its identity also carries `source`, a
/// digest of the declaring expression's tokens, and the `cfg!` `conditions`
/// the expression reads, and the names it `reads` that may be the declaring
/// crate's items (for the macros, where a closure, a named predicate, a
/// custom policy or a build condition decides what the policy does).
#[doc(hidden)]
pub fn __declared(
    policy: PolicyRef,
    source: &'static str,
    conditions: &'static [&'static str],
    reads: &'static [&'static str],
) -> PolicyRef {
    declared::declared(policy, source, conditions, reads)
}

mod builtins;
pub(crate) mod chain;
mod declared;
mod policy_identity;
mod unbuilt;

pub(crate) use unbuilt::{UNBUILT, build as build_declared};

pub use policy_identity::PolicyIdentity;

pub use builtins::{
    AuditPolicy, Authenticated, EnvironmentPolicy, HasPermission, MAX_RATE_LIMIT_BUCKETS,
    RateLimit, RequireConfirmation, TenantBoundary, audit, authenticated, authenticated_by,
    environment, has_permission, has_permission_with, rate_limit, require_confirmation,
    tenant_boundary,
};
#[cfg(not(target_family = "wasm"))]
pub use builtins::{AuditRequired, audit_required};
