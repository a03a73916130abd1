//! A policy as its declaration wrote it: the `policies = [...]` expression
//! of a component, capability or reference whose behaviour its runtime
//! identity cannot show — a closure (a confirmation `when`, a custom
//! check) or a `cfg!(…)` choosing its parameters by build. The macro wraps
//! such a policy so its identity also carries a digest of the expression's
//! tokens and the build conditions it reads: a reviewer (and the review
//! gate) sees a closure's body change, and sees which parameters depend on
//! how the binary is built. It also names what the expression reads (a
//! predicate function, a const, a custom policy's type) so the review gate
//! can digest their source.

use std::sync::Arc;

use serde_json::json;

use super::policy_identity::{PolicyIdentity, seal};
use super::{
    BoxFuture, Decision, Hooks, InvokeContext, Next, Policy, PolicyContext, PolicyRef, PolicyResult,
};
use crate::audit::AuditSink;

/// A policy with what its declaration says about it.
struct Declared {
    inner: PolicyRef,
    source: &'static str,
    conditions: &'static [&'static str],
    reads: &'static [&'static str],
}

impl Policy for Declared {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn hooks(&self) -> Hooks {
        self.inner.hooks()
    }

    fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
        self.inner.on_discovery(ctx)
    }

    fn on_authorize<'a>(
        &'a self,
        ctx: &'a PolicyContext<'a>,
        next: Next<'a, PolicyContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        self.inner.on_authorize(ctx, next)
    }

    fn audit_sink(&self) -> Option<Arc<dyn AuditSink>> {
        self.inner.audit_sink()
    }

    fn on_invoke<'a>(
        &'a self,
        ctx: &'a InvokeContext<'a>,
        next: Next<'a, InvokeContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        self.inner.on_invoke(ctx, next)
    }

    fn __identity(&self, token: seal::Token) -> PolicyIdentity {
        let mut declared = serde_json::Map::new();
        declared.insert("source".into(), json!(self.source));
        declared.insert("conditions".into(), json!(self.conditions));
        if !self.reads.is_empty() {
            declared.insert("reads".into(), json!(self.reads));
        }
        let declared = serde_json::Value::Object(declared);
        self.inner.__identity(token).with("declared", declared)
    }
}

/// `policy`, identified also by its declaration: `source` (a digest of
/// the expression's tokens), the `cfg!` `conditions` it reads and the
/// names it `reads` that may be items of the declaring crate (the review
/// gate digests those items' source: a predicate's body, a const it reads).
pub(crate) fn declared(
    policy: PolicyRef,
    source: &'static str,
    conditions: &'static [&'static str],
    reads: &'static [&'static str],
) -> PolicyRef {
    Arc::new(Declared {
        inner: policy,
        source,
        conditions,
        reads,
    })
}
