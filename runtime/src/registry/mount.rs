//! Mounting: the builder, structural and manifest checks, the registration
//! guard, the policy chains of a new registration, and unmounting. The
//! duplicate and suffix policies apply when it is inserted (`insertion`).

use super::insertion::{Insertion, Refusal};
use super::{GuardDecision, Limits, Mounted, RegistrationCandidate, Registry};

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::registration::{Chain, Chains, Registration};

use crate::audit::{AuditEvent, AuditKind};
use crate::component::Component;
use crate::context::Environment;
use crate::contract::CheckedContract;
use crate::error::DefinitionError;
use crate::events::SurfaceEvent;
use crate::ids::InstanceId;
use crate::procedure::{ErasedRef, ManifestMismatch, Procedure, ProcedureRef, Reference};

/// Why a mount failed. Runtime conditions (duplicates, guard refusals) do
/// not fail: they return a rejected [`Mounted`] handle.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MountError {
    /// A structural defect of the contract or the instance id; raised in
    /// every environment.
    Definition(DefinitionError),
    /// The registry was disposed.
    Disposed,
    /// A procedure reference disagrees with the installed executor's
    /// manifest (id, description, schemas, effect or confirmation posture).
    Manifest(ManifestMismatch),
    /// The suffix-collision policy is `error` and the mount collides.
    SuffixCollision {
        /// The view capability.
        view: String,
        /// The domain procedure it collides with.
        domain: String,
    },
    /// The contract is not one the binary's catalog links (a hand-built or
    /// unknown declaration): the authority mounts only macro contracts.
    NotInCatalog {
        /// The component type (or procedure id) it claims.
        component_type: String,
        /// Its declaration hash.
        declaration_hash: String,
    },
    /// The catalog declares this component type with a different contract:
    /// the declaration hashes disagree.
    ContractMismatch {
        /// The component type.
        component_type: String,
        /// The declaration hash of the contract being mounted.
        declaration_hash: String,
        /// The declaration hash the catalog holds for the type.
        catalog_hash: String,
    },
    /// The registry pins a manifest hash the binary's catalog does not have.
    StaleManifest {
        /// The pinned manifest hash.
        expected: String,
        /// The catalog's manifest hash.
        actual: String,
    },
}

impl fmt::Display for MountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MountError::Definition(err) => err.fmt(f),
            MountError::Disposed => f.write_str("the registry was disposed"),
            MountError::Manifest(mismatch) => mismatch.fmt(f),
            MountError::SuffixCollision { view, domain } => {
                write!(f, "`{view}` collides with the domain procedure `{domain}`")
            }
            MountError::NotInCatalog {
                component_type,
                declaration_hash,
            } => write!(
                f,
                "`{component_type}` (declaration {declaration_hash}) is not in the binary's catalog"
            ),
            MountError::ContractMismatch {
                component_type,
                declaration_hash,
                catalog_hash,
            } => write!(
                f,
                "`{component_type}` (declaration {declaration_hash}) disagrees with the catalog's declaration {catalog_hash}"
            ),
            MountError::StaleManifest { expected, actual } => write!(
                f,
                "the pinned manifest {expected} is stale: the catalog's is {actual}"
            ),
        }
    }
}

/// The structural defect or the manifest disagreement behind a mount
/// failure is its [`source`](std::error::Error::source).
impl std::error::Error for MountError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MountError::Definition(err) => Some(err),
            MountError::Manifest(mismatch) => Some(mismatch),
            _ => None,
        }
    }
}

impl From<DefinitionError> for MountError {
    fn from(err: DefinitionError) -> Self {
        MountError::Definition(err)
    }
}

/// A mount being configured; see [`Registry::mounting`].
#[must_use = "call `.mount()` to mount the component"]
pub struct MountBuilder<'r> {
    registry: &'r Registry,
    contract: Result<&'static CheckedContract, DefinitionError>,
    component: Arc<dyn Component>,
    instance: Option<Instance>,
    enabled: Option<bool>,
    references: Vec<ErasedRef>,
}

/// A mount's instance id as it was given.
enum Instance {
    /// Checked by `mount` (its error names the component type).
    Unchecked(String),
    /// Already a valid id ([`Registry::mount_instance`] checks first, so a
    /// valid id is not copied twice).
    Checked(InstanceId),
}

/// The id as it was given, whether checked yet or not.
impl fmt::Debug for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Instance::Unchecked(text) => fmt::Debug::fmt(text, f),
            Instance::Checked(id) => fmt::Debug::fmt(id.as_str(), f),
        }
    }
}

impl fmt::Debug for MountBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MountBuilder")
            .field("instance", &self.instance)
            .field("enabled", &self.enabled)
            .field("references", &self.references.len())
            .finish_non_exhaustive()
    }
}

impl MountBuilder<'_> {
    /// The instance id (default: the contract's). Derive it from data (an
    /// entity id, a semantic slot), never from render or mount order.
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(Instance::Unchecked(instance.into()));
        self
    }

    /// The initial master switch (default: the contract's `enabled`).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = Some(enabled);
        self
    }

    /// References backend procedure `P` with this mount's bindings. It is
    /// exposed only while the installed executor's manifest lists it.
    pub fn procedure<P: Procedure>(mut self, reference: ProcedureRef<P>) -> Self {
        self.references.push(reference.erase());
        self
    }

    /// Mounts. Structural defects and manifest disagreements fail; runtime
    /// refusals (duplicates, the registration guard) return a rejected handle.
    pub fn mount(self) -> Result<Mounted, MountError> {
        let contract = self.contract?;
        let instance = match self.instance {
            None => contract.default_instance().clone(),
            Some(Instance::Checked(instance)) => instance,
            Some(Instance::Unchecked(instance)) => InstanceId::new(&instance).map_err(|err| {
                DefinitionError::new(
                    crate::error::DefinitionErrorKind::InvalidId,
                    contract.component_type().as_str(),
                    err.to_string(),
                )
            })?,
        };
        let enabled = self.enabled.unwrap_or_else(|| contract.enabled());
        self.registry
            .mount_checked(contract, self.component, instance, enabled, self.references)
    }
}

impl Registry {
    /// Mounts a component under its contract's default instance id.
    pub fn mount<T: Component>(&self, component: Arc<T>) -> Result<Mounted, MountError> {
        self.mounting(component).mount()
    }

    /// Mounts a component under an instance id derived from data (an entity
    /// id, a semantic slot), never from render or mount order.
    pub fn mount_instance<T: Component>(
        &self,
        component: Arc<T>,
        instance: &str,
    ) -> Result<Mounted, MountError> {
        let mut mounting = self.mounting(component);
        mounting.instance = Some(match InstanceId::new(instance) {
            Ok(instance) => Instance::Checked(instance),
            Err(_) => Instance::Unchecked(instance.to_owned()),
        });
        mounting.mount()
    }

    /// Starts a mount with options: an instance id, the initial master
    /// switch, and references to backend procedures.
    ///
    /// ```
    /// # use agent_surface::prelude::*;
    /// # use agent_surface::procedure::{Procedure, ProcedureRef}; use std::sync::Arc;
    /// /// Archive a project.
    /// #[agent_procedure(id = "domain:projects.archive", effect = "server-mutation")]
    /// pub struct Archive {
    ///     /// The project.
    ///     #[schemars(length(max = 64))]
    ///     pub project_id: String,
    /// }
    /// /// A project page.
    /// #[agent_component(type = "projects.page")]
    /// #[reference(Archive, locked = [project_id])]
    /// impl Page {
    ///     /// The project shown.
    ///     #[observation]
    ///     fn project(&self) -> String {
    ///         self.0.clone()
    ///     }
    /// }
    /// struct Page(String);
    ///
    /// let registry = Registry::default();
    /// let page = Arc::new(Page("p1".into()));
    /// let shown = Arc::clone(&page);
    /// let mounted = registry
    ///     .mounting(page)
    ///     .instance("p1")
    ///     .procedure(
    ///         ProcedureRef::<Archive>::new().bind(Archive::fields().project_id, move || shown.0.clone()),
    ///     )
    ///     .mount()?;
    /// # let _ = mounted;
    /// # Ok::<(), agent_surface::registry::MountError>(())
    /// ```
    pub fn mounting<T: Component>(&self, component: Arc<T>) -> MountBuilder<'_> {
        MountBuilder {
            registry: self,
            contract: T::contract().checked(),
            component,
            instance: None,
            enabled: None,
            references: Vec::new(),
        }
    }

    fn check_limits(&self, contract: &CheckedContract) -> Result<(), DefinitionError> {
        let limits = &self.inner.config.limits;
        let defaults = Limits::default();
        contract.check_limits(&self.inner.schema_limits())?;
        let stricter = limits.max_component_description < defaults.max_component_description
            || limits.max_capability_description < defaults.max_capability_description
            || limits.max_meta_bytes < defaults.max_meta_bytes;
        if stricter {
            contract.check_text_limits(
                limits.max_component_description,
                limits.max_capability_description,
                limits.max_meta_bytes,
            )?;
        }
        Ok(())
    }

    /// Builds the references of a mount and checks them against the
    /// installed manifest: absent procedures are not exposed; disagreeing
    /// ones fail the mount.
    fn references(
        &self,
        contract: &CheckedContract,
        erased: Vec<ErasedRef>,
    ) -> Result<Box<[Arc<Reference>]>, MountError> {
        if erased.is_empty() {
            return Ok(Box::default());
        }
        let inner = &self.inner;
        let component_policies = contract.policies();
        let executor = inner.executor();
        let mut references: Vec<Arc<Reference>> = Vec::with_capacity(erased.len());
        for mut reference in erased {
            let id = reference.contract().id();
            if references.iter().any(|r| &**r.id() == id) {
                return Err(MountError::Definition(DefinitionError::new(
                    crate::error::DefinitionErrorKind::DuplicateCapability,
                    id,
                    "the component references this procedure twice",
                )));
            }
            reference.conform(contract)?;
            let policies = std::mem::take(&mut reference.policies);
            let chain = Chain::compose(&inner.config.policies, &component_policies, policies);
            let built = reference.build(chain)?;
            built.capability.input_schema().map_or(Ok(()), |schema| {
                schema
                    .within(&inner.schema_limits())
                    .map_err(|err| err.within(id))
            })?;
            let entry = executor
                .as_ref()
                .and_then(|executor| executor.manifest().get(id).cloned());
            match entry {
                Some(entry) => {
                    crate::procedure::agree(built.procedure, &entry)
                        .map_err(MountError::Manifest)?;
                    built.exposed.store(true, Ordering::Release);
                }
                None => {
                    tracing::info!(
                        procedure = id,
                        "the backend manifest does not list this procedure; the reference registers nothing"
                    );
                }
            }
            references.push(Arc::new(built));
        }
        Ok(references.into_boxed_slice())
    }

    fn mount_checked(
        &self,
        contract: &'static CheckedContract,
        component: Arc<dyn Component>,
        instance: InstanceId,
        enabled: bool,
        references: Vec<ErasedRef>,
    ) -> Result<Mounted, MountError> {
        let inner = &self.inner;
        if inner.disposed.is_cancelled() {
            return Err(MountError::Disposed);
        }
        self.admit(contract, &references)?;
        self.check_limits(contract)?;
        let references = self.references(contract, references)?;
        let registration_id: Arc<str> = inner.ids.registration_id_arc();
        let component_type = Arc::clone(contract.component_type().as_arc());
        if self.guard_refuses(contract, &component_type, &instance, &references) {
            return Ok(self.rejected(registration_id, component_type, instance, "guard"));
        }
        let registration = Arc::new(Registration::new(
            Arc::clone(&registration_id),
            contract,
            instance.clone(),
            component,
            enabled,
            self.policy_chains(contract),
            references,
        ));

        // The baseline `invalidate` compares against (predicates are host
        // code: evaluated before any lock is taken).
        if registration.has_state_derived_availability()
            && let Some(component) = registration.component()
        {
            let _ = registration.reevaluate(&**component);
        }
        let now = inner.now_ms();
        let displaced = match self.insert(&registration, &component_type, &instance, now) {
            Insertion::Inserted(displaced) => displaced,
            Insertion::Refused(released, refusal) => {
                released.drop_unlocked();
                crate::util::contain::drop_contained("registration", registration);
                return match refusal {
                    Refusal::SuffixCollision { view, domain } => Err(MountError::SuffixCollision {
                        view: view.to_string(),
                        domain: domain.to_string(),
                    }),
                    Refusal::Disposed => Err(MountError::Disposed),
                    Refusal::Duplicate => {
                        Ok(self.rejected(registration_id, component_type, instance, "duplicate"))
                    }
                };
            }
        };
        self.finish_insert(displaced, now);
        self.audit_registration(AuditKind::Registration, &registration_id, now, None);
        inner.dispatcher.drain();
        Ok(Mounted {
            registry: self.clone(),
            registration_id,
            registration: Some(registration),
        })
    }

    /// Whether the registration guard refuses the mount (a panicking guard
    /// refuses).
    fn guard_refuses(
        &self,
        contract: &CheckedContract,
        component_type: &str,
        instance: &InstanceId,
        references: &[Arc<Reference>],
    ) -> bool {
        let Some(guard) = &self.inner.config.guard else {
            return false;
        };
        let candidate = RegistrationCandidate {
            component_type,
            instance_id: instance.as_str(),
            origin: contract.origin(),
            capabilities: contract
                .capabilities()
                .iter()
                .map(|c| c.id())
                .chain(
                    references
                        .iter()
                        .filter(|r| r.is_exposed())
                        .map(|r| r.procedure.id()),
                )
                .collect(),
        };
        let verdict =
            crate::util::contain::catch(|| guard(&candidate)).unwrap_or(GuardDecision::Reject);
        verdict == GuardDecision::Reject
    }

    /// The policy chain of each capability: composed per capability when
    /// the component declares policies of its own, else the registry's
    /// chain, shared.
    fn policy_chains(&self, contract: &CheckedContract) -> Chains {
        let inner = &self.inner;
        if !contract.has_own_policies() {
            // Only the registry's chain: shared, nothing to build per mount.
            return Chains::Shared(Arc::clone(&inner.config.base_chain));
        }
        let component_policies = contract.policies();
        Chains::Each(
            contract
                .capabilities()
                .iter()
                .map(|capability| {
                    Chain::compose(
                        &inner.config.policies,
                        &component_policies,
                        capability.policies(),
                    )
                })
                .collect(),
        )
    }

    fn rejected(
        &self,
        registration_id: Arc<str>,
        component_type: Arc<str>,
        instance: InstanceId,
        reason: &'static str,
    ) -> Mounted {
        let inner = &self.inner;
        if inner.config.environment == Environment::Development {
            tracing::error!(%component_type, instance = %instance, reason, "mount rejected");
        }
        let mut event = AuditEvent::new(AuditKind::RegistrationRejected, inner.now_ms());
        event.registration_id = Some(Arc::clone(&registration_id));
        event.detail = Some(serde_json::Map::from_iter([
            (
                "componentType".to_owned(),
                serde_json::Value::from(component_type.to_string()),
            ),
            (
                "instanceId".to_owned(),
                serde_json::Value::from(instance.as_str()),
            ),
            ("reason".to_owned(), serde_json::Value::from(reason)),
        ]));
        inner.record(&event);
        inner.dispatcher.emit([SurfaceEvent::ComponentRejected {
            component_type,
            instance_id: Arc::clone(instance.as_arc()),
            reason,
        }]);
        Mounted {
            registry: self.clone(),
            registration_id,
            registration: None,
        }
    }

    pub(super) fn audit_registration(
        &self,
        kind: AuditKind,
        registration_id: &Arc<str>,
        now: u64,
        detail: Option<serde_json::Map<String, serde_json::Value>>,
    ) {
        let mut event = AuditEvent::new(kind, now);
        event.registration_id = Some(Arc::clone(registration_id));
        event.detail = detail;
        self.inner.record_owned(event);
    }

    pub(crate) fn unregister(&self, registration: &Arc<Registration>) {
        let inner = &self.inner;
        let now = inner.now_ms();
        let mut state = inner.state();
        if !registration.is_active() {
            return;
        }
        let evicted = state.remove(registration, now);
        let released = registration.release();
        let events = if inner.dispatcher.active() {
            vec![SurfaceEvent::ComponentUnregistered {
                registration_id: Arc::clone(&registration.id),
                component_type: Arc::clone(registration.contract.component_type().as_arc()),
                instance_id: Arc::clone(registration.instance.as_arc()),
            }]
        } else {
            Vec::new()
        };
        inner.bump(&mut state, events);
        drop(state);
        // The unmount's events first, then the host hooks of retiring it.
        inner.dispatcher.drain();
        self.retired(registration, now, "unmounted");
        // Last: the destructor may unmount other components (nested mounts)
        // and may panic; neither can hold up or undo this unmount.
        released.drop_unlocked();
        crate::util::contain::drop_contained("evicted tombstones", evicted);
    }
}
