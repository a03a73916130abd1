//! The developer's explain view: why each capability is exposed, disabled or
//! hidden for a consumer, with every policy's vote attributed by name and
//! scope, and `when`-availability kept apart from policy votes. Call
//! [`explain_surface`] when an agent does not see what you expect.
//!
//! Never agent-facing: it reports capabilities the snapshot hides. It is not
//! in the prelude and no adapter uses it. Its composed outcome always equals
//! the snapshot's for the same options.
//!
//! # Example
//! ```
//! use agent_surface::explain::{explain_surface, Outcome};
//! use agent_surface::policy::has_permission;
//! use agent_surface::prelude::*;
//! use agent_surface::registry::Registry;
//! use agent_surface::snapshot::SnapshotOptions;
//! use std::sync::Arc;
//!
//! /// Billing.
//! #[agent_component(type = "billing.panel", policies = [has_permission("billing:read")])]
//! impl Billing {
//!     /// The balance.
//!     #[observation]
//!     fn balance(&self) -> i64 {
//!         0
//!     }
//! }
//! struct Billing;
//!
//! let registry = Registry::builder().build();
//! let _mounted = registry.mount(Arc::new(Billing))?;
//! let explanation = explain_surface(&registry, &SnapshotOptions::default());
//! let balance = &explanation.components[0].capabilities[0];
//! assert_eq!(balance.outcome, Outcome::Hide);
//! assert_eq!(balance.votes[0].policy, "hasPermission(billing:read)");
//! # Ok::<(), agent_surface::registry::MountError>(())
//! ```

use serde::Serialize;

use crate::context::HostContext;
use crate::contract::CheckedCapability;
use crate::policy::{Decision, PolicyContext, Scope};
use crate::registry::{Availability, Chain, Registry};
use crate::snapshot::{SnapshotOptions, in_scope};

/// The composed outcome for one capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Visible and available.
    Expose,
    /// Visible, unavailable.
    Disable,
    /// Not visible.
    Hide,
}

/// One policy's vote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Vote {
    /// The policy's name.
    pub policy: String,
    /// Where it is attached.
    pub scope: Scope,
    /// Its own decision.
    pub decision: Outcome,
    /// Its reason, for `disable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `enabled`, pushed overrides and `when()`, apart from policies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AvailabilityExplanation {
    /// Whether the state allows the call.
    pub available: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One capability, explained.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CapabilityExplanation {
    /// The capability.
    pub capability_id: String,
    /// The composed outcome (equal to the snapshot's).
    pub outcome: Outcome,
    /// The reason shown for `disable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// State-based availability.
    pub availability: AvailabilityExplanation,
    /// Every policy's vote, outermost first.
    pub votes: Vec<Vote>,
}

/// One component, explained.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ComponentExplanation {
    /// The component type.
    pub component_type: String,
    /// The instance.
    pub instance_id: String,
    /// The registration.
    pub registration_id: String,
    /// Every capability, hidden ones included.
    pub capabilities: Vec<CapabilityExplanation>,
    /// Every procedure reference the manifest exposes, hidden ones included.
    pub procedures: Vec<CapabilityExplanation>,
}

/// The whole surface, explained for one consumer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Explanation {
    /// The surface version explained.
    pub surface_version: String,
    /// Every mounted component in scope, in snapshot order.
    pub components: Vec<ComponentExplanation>,
}

fn outcome_of(decision: &Decision) -> (Outcome, Option<String>) {
    match decision {
        Decision::Expose => (Outcome::Expose, None),
        Decision::Disable(reason) => (Outcome::Disable, Some(reason.to_string())),
        Decision::Hide => (Outcome::Hide, None),
    }
}

/// One capability (or procedure reference): every discovery vote, the
/// state's availability, and their composition as the snapshot does it.
fn explain_one(
    capability: &CheckedCapability,
    chain: Option<&Chain>,
    ctx: &PolicyContext<'_>,
    availability: Availability,
    options: &SnapshotOptions,
) -> CapabilityExplanation {
    let mut composed = Decision::Expose;
    let mut votes = Vec::new();
    if let Some(chain) = chain {
        for (policy, scope) in chain.policies.iter().zip(chain.scopes.iter()) {
            if !chain
                .discoverers
                .iter()
                .any(|d| std::sync::Arc::ptr_eq(d, policy))
            {
                continue;
            }
            let vote = crate::registry::vote(policy.as_ref(), ctx);
            let (decision, reason) = outcome_of(&vote);
            votes.push(Vote {
                policy: crate::policy::name_of(policy.as_ref()).into_owned(),
                scope: *scope,
                decision,
                reason,
            });
            composed = composed.and(vote);
        }
    }
    let availability = match availability {
        Availability::Available => AvailabilityExplanation {
            available: true,
            reason: None,
        },
        Availability::Unavailable(reason) => AvailabilityExplanation {
            available: false,
            reason: Some(reason.into_owned()),
        },
    };
    // The same composition as the snapshot: hide wins; otherwise the
    // state's reason, then the first disabling policy's.
    let (outcome, reason) = match (&composed, &availability.reason) {
        (Decision::Hide, _) => (Outcome::Hide, None),
        (_, Some(reason)) => (Outcome::Disable, Some(reason.clone())),
        (Decision::Disable(reason), None) => (Outcome::Disable, Some(reason.to_string())),
        (Decision::Expose, None) => (Outcome::Expose, None),
    };
    let (outcome, reason) = match outcome {
        Outcome::Disable if !options.include_unavailable => (Outcome::Hide, None),
        other => (other, reason),
    };
    CapabilityExplanation {
        capability_id: capability.id().to_string(),
        outcome,
        reason,
        availability,
        votes,
    }
}

/// Explains what `options.consumer` can see, and why.
pub fn explain_surface(registry: &Registry, options: &SnapshotOptions) -> Explanation {
    let inner = registry.services();
    let (ordered, version) = inner.ordered();
    let host: HostContext = inner.host_for(&options.consumer);
    let mut components = Vec::new();
    for registration in ordered.iter() {
        let contract = registration.contract();
        if !in_scope(contract.component_type().as_str(), &options.scope) {
            continue;
        }
        let component = registration.component();
        let capabilities = contract
            .capabilities()
            .iter()
            .enumerate()
            .map(|(index, capability)| {
                let ctx = inner.policy_context(registration, capability, &options.consumer, &host);
                let availability =
                    registration.availability(index, component.as_deref().map(|c| &**c));
                explain_one(
                    capability,
                    registration.chain(index),
                    &ctx,
                    availability,
                    options,
                )
            })
            .collect();
        let procedures = registration
            .references()
            .iter()
            .filter(|reference| reference.is_exposed())
            .map(|reference| {
                let capability = &reference.capability;
                let ctx = inner.policy_context(registration, capability, &options.consumer, &host);
                let availability = registration.procedure_availability(reference);
                explain_one(
                    capability,
                    Some(&reference.chain),
                    &ctx,
                    availability,
                    options,
                )
            })
            .collect();
        components.push(ComponentExplanation {
            component_type: contract.component_type().to_string(),
            instance_id: registration.instance().to_string(),
            registration_id: registration.id().to_string(),
            capabilities,
            procedures,
        });
    }
    Explanation {
        surface_version: version.to_string(),
        components,
    }
}
