//! A policy expression that panicked: the chain it belonged to is built
//! with this stand-in, which fails closed — it hides the capability and
//! refuses every call as not found — so a panic never escapes a mount, a
//! catalog or a hash, and never leaves a capability ungated.

use std::sync::Arc;

use super::policy_identity::{PolicyIdentity, seal::Token};
use super::{BoxFuture, Decision, Hooks, Next, Policy, PolicyContext, PolicyRef, PolicyResult};
use crate::error::ErrorPayload;

/// The stand-in for a policy list whose expression panicked.
#[derive(Debug)]
pub(crate) struct Unbuilt {
    message: String,
}

/// The kind an [`Unbuilt`] identity carries.
pub(crate) const UNBUILT: &str = "unbuilt";

impl Policy for Unbuilt {
    fn name(&self) -> &str {
        "unbuilt (its expression panicked)"
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            discovery: true,
            authorize: true,
            invoke: false,
        }
    }
    fn on_discovery(&self, _: &PolicyContext<'_>) -> Decision {
        Decision::Hide
    }
    fn on_authorize<'a>(
        &'a self,
        _: &'a PolicyContext<'a>,
        _: Next<'a, PolicyContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        Box::pin(std::future::ready(Err(ErrorPayload::not_found())))
    }
    fn __identity(&self, _: Token) -> PolicyIdentity {
        let parameters = serde_json::json!({ "panic": self.message });
        PolicyIdentity::builtin(UNBUILT, self.name(), parameters)
    }
}

/// Runs a declared policy list's expression, contained: a panic gives the
/// fail-closed stand-in (and is logged).
pub(crate) fn build(policies: fn() -> Vec<PolicyRef>) -> Vec<PolicyRef> {
    crate::util::contain::catch(policies).unwrap_or_else(|panic| {
        tracing::error!(panic = %panic.message, "a declared policy expression panicked; the capability is hidden and refused");
        vec![Arc::new(Unbuilt { message: panic.message }) as PolicyRef]
    })
}
