//! The closed authority: the binary's catalog decides what may mount.
//!
//! Every `#[agent_component]` and `#[agent_procedure]` links its `'static`
//! contract into the catalog. The authority is built once per process from
//! that catalog and never changes: a registry mounts a component only when
//! its contract *is* one of the linked macro contracts (the same static, so
//! kind, descriptions, schemas, effects, confirmation posture and policies
//! are the reviewed ones, with the recorded declaration hash), and binds a
//! procedure reference only when its procedure contract is linked as well.
//! Anything else fails closed with a typed [`MountError`].
//!
//! # Guarantee boundary
//! No public, documented item builds a contract or implements
//! [`Component`](crate::Component): the contract constructors and the
//! dispatch methods are hidden support for generated code. Code that
//! deliberately uses hidden items (`macro_support`, `__invoke`, hand-written
//! `inventory` submissions) is outside the guarantee.

use std::sync::OnceLock;

use super::{MountError, Registry};
use crate::contract::CheckedContract;
use crate::procedure::{ErasedRef, ProcedureContract};

struct Declaration {
    contract: &'static CheckedContract,
    component_type: Box<str>,
    hash: String,
}

/// The catalog as the process-wide, immutable authority.
struct Authority {
    components: Vec<Declaration>,
    procedures: Vec<&'static ProcedureContract>,
    manifest: String,
}

fn authority() -> &'static Authority {
    static AUTHORITY: OnceLock<Authority> = OnceLock::new();
    AUTHORITY.get_or_init(|| {
        let components: Vec<Declaration> = crate::catalog::contracts()
            .into_iter()
            .filter_map(|contract| contract.checked().ok())
            .map(|checked| Declaration {
                contract: checked,
                component_type: checked.component_type().as_str().into(),
                hash: checked.declaration_hash(),
            })
            .collect();
        let mut hashes: Vec<String> = components.iter().map(|d| d.hash.clone()).collect();
        let mut procedures = Vec::new();
        for contract in crate::procedure::contracts() {
            if let Ok(checked) = contract.checked() {
                procedures.push(contract);
                hashes.push(checked.declaration_hash());
            }
        }
        Authority {
            components,
            procedures,
            manifest: crate::hashes::manifest_of(hashes),
        }
    })
}

impl Registry {
    /// The manifest hash of the authority this registry mounts against: the
    /// binary's catalog (every valid linked macro contract). Equal to
    /// [`Catalog::manifest_hash`](crate::catalog::Catalog::manifest_hash)
    /// when every authored contract is valid.
    pub fn manifest_hash(&self) -> &'static str {
        &authority().manifest
    }

    /// Admits a contract and its procedure references, or fails closed.
    pub(super) fn admit(
        &self,
        contract: &'static CheckedContract,
        references: &[ErasedRef],
    ) -> Result<(), MountError> {
        let authority = authority();
        if let Some(expected) = &self.inner.config.expected_manifest
            && **expected != *authority.manifest
        {
            return Err(MountError::StaleManifest {
                expected: expected.to_string(),
                actual: authority.manifest.clone(),
            });
        }
        let linked = authority
            .components
            .iter()
            .any(|declaration| std::ptr::eq(declaration.contract, contract));
        if !linked {
            let component_type = contract.component_type().as_str();
            let declaration_hash = contract.declaration_hash();
            let catalog_hash = authority
                .components
                .iter()
                .find(|d| &*d.component_type == component_type && d.hash != declaration_hash)
                .map(|d| d.hash.clone());
            return Err(match catalog_hash {
                Some(catalog_hash) => MountError::ContractMismatch {
                    component_type: component_type.to_owned(),
                    declaration_hash,
                    catalog_hash,
                },
                None => MountError::NotInCatalog {
                    component_type: component_type.to_owned(),
                    declaration_hash,
                },
            });
        }
        for reference in references {
            let procedure = reference.contract();
            if !authority
                .procedures
                .iter()
                .any(|linked| std::ptr::eq(*linked, procedure))
            {
                return Err(MountError::NotInCatalog {
                    component_type: procedure.id().to_owned(),
                    declaration_hash: procedure
                        .checked()
                        .map(|checked| checked.declaration_hash())
                        .unwrap_or_default(),
                });
            }
        }
        Ok(())
    }
}
