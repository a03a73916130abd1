//! Reach declared beside a component's capabilities, so review sees it
//! whatever the build or the mount: capabilities under `#[cfg]` (recorded
//! whether or not this build includes them) and the procedures the
//! component references, with the least gating every mount must give them.

use agent_surface_rules::{Confirmation, Effect, Kind};
use serde_json::{Value, json};

use super::vocabulary::PoliciesFn;
use crate::policy::{PolicyIdentity, PolicyRef};

/// A capability declared under `#[cfg(…)]`: recorded by the macro whether
/// or not the build includes it, so a reviewer sees it with its condition.
#[derive(Debug)]
pub struct GatedCapability {
    kind: Kind,
    name: &'static str,
    effect: Effect,
    condition: &'static str,
    in_build: bool,
    digest: &'static str,
}

impl GatedCapability {
    /// Records one gated capability (generated code only).
    #[doc(hidden)]
    pub const fn new(
        kind: Kind,
        name: &'static str,
        effect: Effect,
        condition: &'static str,
        in_build: bool,
        digest: &'static str,
    ) -> GatedCapability {
        GatedCapability {
            kind,
            name,
            effect,
            condition,
            in_build,
            digest,
        }
    }

    /// A digest of the method's text as written (attributes included): a
    /// change to a capability outside the build changes it.
    pub fn digest(&self) -> &'static str {
        self.digest
    }

    /// Observation or action.
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// The capability name.
    pub fn name(&self) -> &'static str {
        self.name
    }
    /// The declared effect (`read` for observations).
    pub fn effect(&self) -> Effect {
        self.effect
    }
    /// The condition, as written inside `#[cfg(…)]` (several are joined
    /// with `all(…)`).
    pub fn condition(&self) -> &'static str {
        self.condition
    }
    /// Whether this build includes it.
    pub fn in_build(&self) -> bool {
        self.in_build
    }

    /// The catalog and hash form, given the component type.
    pub(crate) fn to_json(&self, component_type: &str) -> Value {
        json!({
            "capabilityId": agent_surface_rules::ids::view_capability_id(component_type, self.name),
            "kind": self.kind.as_str(),
            "effect": self.effect.as_str(),
            "cfg": self.condition,
            "inBuild": self.in_build,
            "digest": self.digest,
        })
    }
}

/// A procedure the component may reference, declared with
/// `#[reference(Procedure, …)]` on its impl block: the procedure, and the
/// least gating every mounted reference gives it — fields locked to UI
/// state, a `when` rule, a confirmation posture, policies. The registry
/// refuses a mount whose reference is undeclared or gives less; the
/// declared policies are installed on every mounted reference.
pub struct DeclaredReference {
    procedure_id: fn() -> &'static str,
    locked: fn() -> Vec<&'static str>,
    when: bool,
    confirmation: Option<Confirmation>,
    policies: Option<PoliciesFn>,
}

impl std::fmt::Debug for DeclaredReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeclaredReference")
            .field("procedure", &self.procedure_id())
            .field("locked", &self.locked())
            .field("when", &self.when)
            .finish_non_exhaustive()
    }
}

impl DeclaredReference {
    /// Declares a reference (generated code only).
    #[doc(hidden)]
    pub const fn new(
        procedure_id: fn() -> &'static str,
        locked: fn() -> Vec<&'static str>,
    ) -> DeclaredReference {
        DeclaredReference {
            procedure_id,
            locked,
            when: false,
            confirmation: None,
            policies: None,
        }
    }
    #[doc(hidden)]
    pub const fn with_when(mut self) -> Self {
        self.when = true;
        self
    }
    #[doc(hidden)]
    pub const fn with_confirmation(mut self, confirmation: Confirmation) -> Self {
        self.confirmation = Some(confirmation);
        self
    }
    #[doc(hidden)]
    pub const fn with_policies(mut self, policies: PoliciesFn) -> Self {
        self.policies = Some(policies);
        self
    }

    /// The referenced procedure's id.
    pub fn procedure_id(&self) -> &'static str {
        (self.procedure_id)()
    }
    /// The wire names of the fields every mount locks to UI state, sorted.
    pub fn locked(&self) -> Vec<&'static str> {
        let mut locked = (self.locked)();
        locked.sort_unstable();
        locked.dedup();
        locked
    }
    /// Whether every mount gives it a `when` rule.
    pub fn has_when(&self) -> bool {
        self.when
    }
    /// The least confirmation posture every mount gives it.
    pub fn confirmation(&self) -> Option<Confirmation> {
        self.confirmation
    }
    /// A fresh instance of the declared policies.
    pub fn policies(&self) -> Vec<PolicyRef> {
        self.policies
            .map(crate::policy::build_declared)
            .unwrap_or_default()
    }
    /// The declared policies' identities.
    pub fn policy_identities(&self) -> Vec<PolicyIdentity> {
        self.policies()
            .iter()
            .map(|policy| crate::policy::identity(policy.as_ref()))
            .collect()
    }

    /// The catalog and hash form.
    pub(crate) fn to_json(&self) -> Value {
        let locked: Vec<Value> = self
            .locked()
            .into_iter()
            .map(|name| json!({ "path": format!("/{name}"), "locked": true }))
            .collect();
        let policies: Vec<Value> = self
            .policy_identities()
            .into_iter()
            .map(PolicyIdentity::into_json)
            .collect();
        json!({
            "procedureId": self.procedure_id(),
            "boundFields": locked,
            "conditional": self.when,
            "confirmation": self.confirmation.map(Confirmation::as_str),
            "policies": policies,
        })
    }
}
