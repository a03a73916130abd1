//! A composed policy chain: the policies of one capability, registry →
//! component → capability, frozen at mount, with the hooks each implements
//! asked once and discovery votes combined most-restrictive-wins.

use std::sync::Arc;

use crate::audit::AuditSink;
use crate::policy::{Decision, PolicyContext, PolicyRef, Scope};

/// The composed policy chain of one capability: registry → component →
/// capability, frozen at mount.
#[derive(Clone, Debug)]
pub(crate) struct Chain {
    pub(crate) policies: Arc<[PolicyRef]>,
    pub(crate) scopes: Arc<[Scope]>,
    pub(crate) discovery: bool,
    /// The policies with a discovery hook, in chain order.
    pub(crate) discoverers: Arc<[PolicyRef]>,
    pub(crate) authorize: Arc<[PolicyRef]>,
    pub(crate) invoke: Arc<[PolicyRef]>,
    pub(crate) audit_sinks: Arc<[Arc<dyn AuditSink>]>,
}

impl Chain {
    pub(crate) fn compose(
        registry: &[PolicyRef],
        component: &[PolicyRef],
        capability: Vec<PolicyRef>,
    ) -> Chain {
        let scoped = registry
            .iter()
            .map(|p| (Arc::clone(p), Scope::Registry))
            .chain(component.iter().map(|p| (Arc::clone(p), Scope::Component)))
            .chain(capability.into_iter().map(|p| (p, Scope::Capability)));
        let (policies, scopes): (Vec<PolicyRef>, Vec<Scope>) = scoped.unzip();
        // Asked once, contained: a policy whose `hooks()` panics runs every
        // hook (each contained where it is called).
        let hooks: Vec<crate::policy::Hooks> = policies
            .iter()
            .map(|policy| {
                crate::util::contain::contained("policy hooks", || policy.hooks())
                    .unwrap_or(crate::policy::Hooks::ALL)
            })
            .collect();
        let pick = |wanted: fn(&crate::policy::Hooks) -> bool| -> Arc<[PolicyRef]> {
            policies
                .iter()
                .zip(&hooks)
                .filter(|(_, hooks)| wanted(hooks))
                .map(|(policy, _)| Arc::clone(policy))
                .collect()
        };
        let discoverers = pick(|hooks| hooks.discovery);
        Chain {
            discovery: !discoverers.is_empty(),
            discoverers,
            authorize: pick(|hooks| hooks.authorize),
            invoke: pick(|hooks| hooks.invoke),
            audit_sinks: policies
                .iter()
                .filter_map(|policy| {
                    crate::util::contain::contained("policy audit sink", || policy.audit_sink())
                        .flatten()
                })
                .collect(),
            policies: policies.into(),
            scopes: scopes.into(),
        }
    }

    /// Most-restrictive-wins discovery; a panicking policy hides (fail closed).
    pub(crate) fn discover(&self, ctx: &PolicyContext<'_>) -> Decision {
        if !self.discovery {
            return Decision::Expose;
        }
        let mut decision = Decision::Expose;
        for policy in self.discoverers.iter() {
            let vote = vote(policy.as_ref(), ctx);
            decision = decision.and(vote);
            if decision == Decision::Hide {
                break;
            }
        }
        decision
    }
}

/// One policy's discovery vote, with panics contained (a panic hides).
pub(crate) fn vote(policy: &dyn crate::policy::Policy, ctx: &PolicyContext<'_>) -> Decision {
    crate::util::contain::catch(|| policy.on_discovery(ctx)).unwrap_or_else(|_| {
        tracing::error!(
            policy = %crate::policy::name_of(policy),
            "a policy panicked at discovery; the capability is hidden"
        );
        Decision::Hide
    })
}
