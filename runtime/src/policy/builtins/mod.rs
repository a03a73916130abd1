//! The built-in policies. None needs an external service; each reads time
//! only through the context's clock.

#[cfg(not(target_family = "wasm"))]
mod audit_required;
mod buckets;
mod rate_limit;

#[cfg(not(target_family = "wasm"))]
pub use audit_required::{AuditRequired, audit_required};
pub use rate_limit::{MAX_RATE_LIMIT_BUCKETS, RateLimit, rate_limit};

use std::sync::Arc;

use serde_json::{Value, json};

use super::policy_identity::{PolicyIdentity, seal::Token, supplied};
use super::{BoxFuture, Decision, Hooks, InvokeContext, Next, Policy, PolicyContext, PolicyResult};
use crate::audit::{AuditEvent, AuditSink};
use crate::context::{Environment, HostContext};
use crate::error::ErrorPayload;
use agent_surface_rules::Audit;

/// The hooks of a gate: it decides visibility and re-checks at authorization.
const GATE: Hooks = Hooks {
    discovery: true,
    authorize: true,
    invoke: false,
};

/// Exposes what a gate allows, hides the rest.
fn visible(allowed: bool) -> Decision {
    if allowed {
        Decision::Expose
    } else {
        Decision::Hide
    }
}

/// Continues the onion when allowed, else denies with `denial`.
fn pass<'a, C: Sync>(
    allowed: bool,
    next: Next<'a, C>,
    denial: impl FnOnce() -> ErrorPayload,
) -> BoxFuture<'a, PolicyResult> {
    if allowed {
        next.run()
    } else {
        Box::pin(std::future::ready(Err(denial())))
    }
}

fn present(value: Option<&Value>) -> bool {
    value.is_some_and(|value| !value.is_null())
}

/// Requires an authenticated user: `host[key]` present and not null.
/// Hides at discovery; `NOT_AUTHENTICATED` at authorization.
#[derive(Clone, Debug)]
pub struct Authenticated {
    key: String,
}

/// [`Authenticated`] reading `host["user"]`.
pub fn authenticated() -> Authenticated {
    authenticated_by("user")
}

/// [`Authenticated`] reading `host[key]`.
pub fn authenticated_by(key: impl Into<String>) -> Authenticated {
    Authenticated { key: key.into() }
}

impl Policy for Authenticated {
    fn name(&self) -> &str {
        "authenticated"
    }
    fn __identity(&self, _: Token) -> PolicyIdentity {
        PolicyIdentity::builtin("authenticated", self.name(), json!({ "key": self.key }))
    }
    fn hooks(&self) -> Hooks {
        GATE
    }
    fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
        visible(present(ctx.host().get(&self.key)))
    }
    fn on_authorize<'a>(
        &'a self,
        ctx: &'a PolicyContext<'a>,
        next: Next<'a, PolicyContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        pass(present(ctx.host().get(&self.key)), next, || {
            ErrorPayload::not_authenticated()
        })
    }
}

type PermissionCheck = Arc<dyn Fn(&HostContext, &str) -> bool + Send + Sync>;

/// Requires a permission. Hides at discovery; `NOT_AUTHORIZED {origin:
/// "client"}` at authorization.
#[derive(Clone)]
pub struct HasPermission {
    name: String,
    permission: String,
    check: PermissionCheck,
    custom_check: bool,
}

impl std::fmt::Debug for HasPermission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HasPermission")
            .field("permission", &self.permission)
            .finish()
    }
}

fn listed(value: Option<&Value>, permission: &str) -> bool {
    value
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().any(|p| p.as_str() == Some(permission)))
}

/// [`HasPermission`] reading `host["user"]["permissions"]` (or
/// `host["permissions"]`), a JSON array of strings.
pub fn has_permission(permission: impl Into<String>) -> HasPermission {
    let mut policy = has_permission_with(permission, |host: &HostContext, permission: &str| {
        listed(
            host.get("user").and_then(|user| user.get("permissions")),
            permission,
        ) || listed(host.get("permissions"), permission)
    });
    policy.custom_check = false;
    policy
}

/// [`HasPermission`] with your own check over the host context.
pub fn has_permission_with(
    permission: impl Into<String>,
    check: impl Fn(&HostContext, &str) -> bool + Send + Sync + 'static,
) -> HasPermission {
    let permission = permission.into();
    HasPermission {
        name: format!("hasPermission({permission})"),
        permission,
        check: Arc::new(check),
        custom_check: true,
    }
}

impl HasPermission {
    fn allowed(&self, host: &HostContext) -> bool {
        (self.check)(host, &self.permission)
    }
}

impl Policy for HasPermission {
    fn name(&self) -> &str {
        &self.name
    }
    fn __identity(&self, _: Token) -> PolicyIdentity {
        let parameters = json!({
            "permission": self.permission,
            "check": supplied(self.custom_check),
        });
        PolicyIdentity::builtin("hasPermission", &self.name, parameters)
    }
    fn hooks(&self) -> Hooks {
        GATE
    }
    fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
        visible(self.allowed(ctx.host()))
    }
    fn on_authorize<'a>(
        &'a self,
        ctx: &'a PolicyContext<'a>,
        next: Next<'a, PolicyContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        pass(self.allowed(ctx.host()), next, || {
            ErrorPayload::not_authorized(crate::error::Origin::Client)
        })
    }
}

type TenantOf<T> = Arc<dyn Fn(&T) -> Option<String> + Send + Sync>;
type TenantOfContext = Arc<dyn for<'a> Fn(&PolicyContext<'a>) -> Option<String> + Send + Sync>;

/// Hides capabilities of another tenant: visible only when the host's
/// current tenant equals the tenant the capability belongs to.
#[derive(Clone)]
pub struct TenantBoundary {
    current: TenantOf<HostContext>,
    expected: TenantOfContext,
    custom: bool,
}

impl std::fmt::Debug for TenantBoundary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TenantBoundary")
    }
}

/// [`TenantBoundary`] comparing `host["tenant"]` with the `tenant` key of the
/// capability's (else the component's) internal metadata.
pub fn tenant_boundary() -> TenantBoundary {
    let mut boundary = TenantBoundary::new(
        |host| {
            host.get("tenant")
                .and_then(Value::as_str)
                .map(str::to_owned)
        },
        |ctx| {
            ctx.capability_internal()
                .and_then(|internal| internal.get("tenant"))
                .or_else(|| {
                    ctx.component_internal()
                        .and_then(|internal| internal.get("tenant"))
                })
                .and_then(Value::as_str)
                .map(str::to_owned)
        },
    );
    boundary.custom = false;
    boundary
}

impl TenantBoundary {
    /// A boundary from two extractors.
    pub fn new(
        current: impl Fn(&HostContext) -> Option<String> + Send + Sync + 'static,
        expected: impl for<'a> Fn(&PolicyContext<'a>) -> Option<String> + Send + Sync + 'static,
    ) -> TenantBoundary {
        TenantBoundary {
            current: Arc::new(current),
            expected: Arc::new(expected),
            custom: true,
        }
    }

    fn inside(&self, ctx: &PolicyContext<'_>) -> bool {
        match ((self.current)(ctx.host()), (self.expected)(ctx)) {
            (Some(current), Some(expected)) => current == expected,
            _ => false,
        }
    }
}

impl Policy for TenantBoundary {
    fn name(&self) -> &str {
        "tenantBoundary"
    }
    fn __identity(&self, _: Token) -> PolicyIdentity {
        let parameters = json!({ "tenant": supplied(self.custom) });
        PolicyIdentity::builtin("tenantBoundary", self.name(), parameters)
    }
    fn hooks(&self) -> Hooks {
        GATE
    }
    fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
        visible(self.inside(ctx))
    }
    fn on_authorize<'a>(
        &'a self,
        ctx: &'a PolicyContext<'a>,
        next: Next<'a, PolicyContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        pass(self.inside(ctx), next, ErrorPayload::not_found)
    }
}

/// Hides capabilities outside the allowed environments.
#[derive(Clone, Debug)]
pub struct EnvironmentPolicy {
    name: String,
    allowed: Vec<Environment>,
}

/// [`EnvironmentPolicy`]: visible only in the listed environments.
pub fn environment(allowed: impl IntoIterator<Item = Environment>) -> EnvironmentPolicy {
    let allowed: Vec<Environment> = allowed.into_iter().collect();
    let names: Vec<&str> = allowed.iter().map(|e| e.as_str()).collect();
    EnvironmentPolicy {
        name: format!("environment({})", names.join(",")),
        allowed,
    }
}

impl Policy for EnvironmentPolicy {
    fn name(&self) -> &str {
        &self.name
    }
    fn __identity(&self, _: Token) -> PolicyIdentity {
        let allowed: Vec<&str> = self.allowed.iter().map(|e| e.as_str()).collect();
        PolicyIdentity::builtin("environment", &self.name, json!({ "allowed": allowed }))
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            discovery: true,
            authorize: false,
            invoke: false,
        }
    }
    fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
        visible(self.allowed.contains(&ctx.environment()))
    }
}

type InvokePredicate = Arc<dyn for<'a> Fn(&InvokeContext<'a>) -> bool + Send + Sync>;
type InvokeSummary = Arc<dyn for<'a> Fn(&InvokeContext<'a>) -> String + Send + Sync>;

/// Escalates confirmation to required (for every call, or when a predicate
/// over the validated effective input holds).
#[derive(Clone, Default)]
pub struct RequireConfirmation {
    when: Option<InvokePredicate>,
    summary: Option<InvokeSummary>,
}

impl std::fmt::Debug for RequireConfirmation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequireConfirmation")
    }
}

/// [`RequireConfirmation`] for every call.
pub fn require_confirmation() -> RequireConfirmation {
    RequireConfirmation::default()
}

impl RequireConfirmation {
    /// Only when `predicate` holds over the effective input.
    #[must_use]
    pub fn when(
        mut self,
        predicate: impl for<'a> Fn(&InvokeContext<'a>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.when = Some(Arc::new(predicate));
        self
    }

    /// The summary shown to the user.
    #[must_use]
    pub fn summary(
        mut self,
        summary: impl for<'a> Fn(&InvokeContext<'a>) -> String + Send + Sync + 'static,
    ) -> Self {
        self.summary = Some(Arc::new(summary));
        self
    }
}

impl Policy for RequireConfirmation {
    fn name(&self) -> &str {
        "requireConfirmation"
    }
    fn __identity(&self, _: Token) -> PolicyIdentity {
        let parameters = json!({
            "when": if self.when.is_some() { "custom" } else { "always" },
            "summary": supplied(self.summary.is_some()),
        });
        PolicyIdentity::builtin("requireConfirmation", self.name(), parameters)
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            discovery: false,
            authorize: false,
            invoke: true,
        }
    }
    fn on_invoke<'a>(
        &'a self,
        ctx: &'a InvokeContext<'a>,
        next: Next<'a, InvokeContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        if self.when.as_ref().is_none_or(|when| when(ctx)) {
            ctx.require_confirmation(self.summary.as_ref().map(|summary| summary(ctx)));
        }
        next.run()
    }
}

/// Forwards a capability's audit events to its own sink (on top of the
/// registry's), at most at `level`.
#[derive(Clone, Debug)]
pub struct AuditPolicy {
    sink: Arc<LevelFilter>,
}

/// Keeps payloads only at level `full`; forwards nothing at `none`.
#[derive(Debug)]
struct LevelFilter {
    sink: Arc<dyn AuditSink>,
    level: Audit,
}

impl AuditSink for LevelFilter {
    fn record(&self, event: &AuditEvent) {
        match self.level {
            Audit::None => {}
            Audit::Full => self.sink.record(event),
            Audit::Metadata => {
                let mut event = event.clone();
                event.payload = None;
                self.sink.record(&event);
            }
        }
    }
}

/// [`AuditPolicy`] forwarding metadata-level records to `sink`.
pub fn audit(sink: Arc<dyn AuditSink>) -> AuditPolicy {
    AuditPolicy {
        sink: Arc::new(LevelFilter {
            sink,
            level: Audit::Metadata,
        }),
    }
}

impl AuditPolicy {
    /// Sets the level of what is forwarded.
    #[must_use]
    pub fn level(self, level: Audit) -> AuditPolicy {
        AuditPolicy {
            sink: Arc::new(LevelFilter {
                sink: Arc::clone(&self.sink.sink),
                level,
            }),
        }
    }
}

impl Policy for AuditPolicy {
    fn name(&self) -> &str {
        "audit"
    }
    fn __identity(&self, _: Token) -> PolicyIdentity {
        let parameters = json!({ "level": self.sink.level.as_str() });
        PolicyIdentity::builtin("audit", self.name(), parameters)
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            discovery: false,
            authorize: false,
            invoke: false,
        }
    }
    fn audit_sink(&self) -> Option<Arc<dyn AuditSink>> {
        Some(Arc::clone(&self.sink) as Arc<dyn AuditSink>)
    }
}
