//! A mounted reference against its declaration: a component may reference
//! only the procedures its `#[reference(…)]` attributes declare, and each
//! mount gives at least the declared gating. The declared policies are
//! installed on the reference, so they are written once.

use super::ErasedRef;
use crate::contract::CheckedContract;
use crate::error::{DefinitionError, DefinitionErrorKind as K};
use crate::policy::identity;

impl ErasedRef {
    /// Checks this reference against `contract`'s declaration of it and
    /// installs every declared policy, outermost. A mount only adds: a
    /// policy it carries never stands in for a declared one, however alike
    /// (an identity names a supplied closure only as supplied, so a
    /// look-alike with a permissive check would otherwise replace the
    /// reviewed one). Both then run: a chain only narrows, and a carried
    /// duplicate of a declared policy keeps its own state (a second rate
    /// limit of the same terms counts the same calls).
    pub(crate) fn conform(&mut self, contract: &CheckedContract) -> Result<(), DefinitionError> {
        let procedure = self.contract.id();
        let component = contract.component_type().as_str();
        let Some(declared) = contract.reference(procedure) else {
            let rust_type = self.contract.source().rust_type;
            return Err(DefinitionError::new(
                K::InvalidDefinition,
                procedure,
                format!(
                    "component `{component}` does not declare a reference to `{procedure}`: add \
                     `#[reference({rust_type})]` to its impl block, below `#[agent_component]`, \
                     so that review sees what an agent can reach through it"
                ),
            ));
        };
        let mut shortfall = Vec::new();
        for name in declared.locked() {
            if !self.fields.iter().any(|f| f.name == name && f.locked) {
                shortfall.push(format!(
                    "the declaration locks `{name}`, but this reference does not bind it with `.bind(…)`"
                ));
            }
        }
        if declared.has_when() && self.when.is_none() {
            shortfall.push(
                "the declaration says `when`, but this reference has no `.when(…)` rule".to_owned(),
            );
        }
        if let Some(least) = declared.confirmation() {
            let given = match self.confirmation {
                Some(given) => given,
                None => self.contract.checked()?.confirmation(),
            };
            if given < least {
                shortfall.push(format!(
                    "the declaration asks confirmation `{}`, this reference gives `{}`",
                    least.as_str(),
                    given.as_str()
                ));
            }
        }
        if !shortfall.is_empty() {
            return Err(DefinitionError::new(
                K::InvalidDefinition,
                procedure,
                format!(
                    "the reference mounted on `{component}` gives less than its declaration: {}",
                    shortfall.join("; ")
                ),
            ));
        }
        // A declared policy expression that panicked fails the mount (the
        // catalog and the hashes carry its fail-closed stand-in).
        let declared_policies = declared.policies();
        if let Some(unbuilt) = declared_policies
            .iter()
            .map(|policy| identity(policy.as_ref()))
            .find(|id| id.as_json()["policy"] == crate::policy::UNBUILT)
        {
            return Err(DefinitionError::new(
                K::InvalidDefinition,
                procedure,
                format!(
                    "a policy declared on `{component}`'s reference panicked while it was built: {}",
                    unbuilt.as_json()["panic"].as_str().unwrap_or_default()
                ),
            ));
        }
        let mut installed = declared_policies;
        installed.append(&mut self.policies);
        self.policies = installed;
        Ok(())
    }
}
