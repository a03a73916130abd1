//! The built-in `audit_required`: the capabilities it guards do not run
//! while the durable audit log cannot record them.

use serde_json::json;

use super::super::policy_identity::{PolicyIdentity, seal::Token};
use super::super::{BoxFuture, Hooks, Next, Policy, PolicyContext, PolicyResult};
use crate::audit::AuditLog;
use crate::error::{ErrorPayload, Retry};

/// What a refused call is told.
const REASON: &str = "its audit record cannot be written; try again later";

/// Refuses the capabilities it guards while `log` cannot write: a full
/// disk, a quota, a directory gone. The audit sink itself never fails the
/// pipeline; a host for which an unrecorded call must not run attaches
/// this policy to those capabilities (or to the registry, for all).
#[derive(Clone, Debug)]
pub struct AuditRequired {
    log: AuditLog,
}

/// [`AuditRequired`] over `log`: `CAPABILITY_NOT_AVAILABLE` (retry after a
/// delay) while the log's last write failed. Capabilities stay visible: the
/// refusal is a state of the application, not of the agent's authority.
pub fn audit_required(log: &AuditLog) -> AuditRequired {
    AuditRequired { log: log.clone() }
}

impl Policy for AuditRequired {
    fn name(&self) -> &str {
        "auditRequired"
    }
    fn __identity(&self, _: Token) -> PolicyIdentity {
        PolicyIdentity::builtin("auditRequired", self.name(), json!({}))
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            discovery: false,
            authorize: true,
            invoke: false,
        }
    }
    fn on_authorize<'a>(
        &'a self,
        ctx: &'a PolicyContext<'a>,
        next: Next<'a, PolicyContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        let _ = ctx;
        if !self.log.health_checked_sparingly() {
            let refused = ErrorPayload::not_available(REASON).with_retry(Retry::AfterDelay);
            return Box::pin(std::future::ready(Err(refused)));
        }
        next.run()
    }
}
