//! Inserting a new registration into the live state: the suffix and
//! duplicate policies decided under the state lock, and what a replacement
//! leaves to finish once the lock is released (host hooks, destructors,
//! the collision warning).

use std::sync::Arc;

use super::registration::{Registration, Released};
use super::{DuplicatePolicy, Registry, State, SuffixPolicy, Tombstone};

use crate::audit::{AuditEvent, AuditKind};
use crate::contract::CheckedContract;
use crate::events::SurfaceEvent;
use crate::ids::InstanceId;

/// What inserting a registration did.
pub(super) enum Insertion {
    /// It is live; what it displaced is finished after the lock.
    Inserted(Displaced),
    /// It was refused under the lock and released: drop the released
    /// parts and the registration unlocked.
    Refused(Released, Refusal),
}

/// Why an insertion was refused.
pub(super) enum Refusal {
    /// The suffix policy is `Error` and a view capability shares its suffix
    /// with a known domain procedure.
    SuffixCollision {
        /// The view capability.
        view: Arc<str>,
        /// The domain procedure.
        domain: Arc<str>,
    },
    /// The duplicate policy is `Reject` and the type and instance are live.
    Duplicate,
    /// The registry was disposed since the mount began.
    Disposed,
}

/// What an insertion leaves to finish without the state lock.
pub(super) struct Displaced {
    /// The suffix collision to warn about (`SuffixPolicy::Warn`).
    collision: Option<(Arc<str>, Arc<str>)>,
    /// The registration it replaced (`DuplicatePolicy::Replace`).
    replaced: Option<(Arc<Registration>, Released)>,
    /// Tombstones that made room.
    evicted: Option<(Arc<str>, Tombstone)>,
}

impl Registry {
    /// Inserts `registration` under the state lock, applying the suffix
    /// and duplicate policies, and bumps the surface version with the
    /// events of the change.
    pub(super) fn insert(
        &self,
        registration: &Arc<Registration>,
        component_type: &Arc<str>,
        instance: &InstanceId,
        now: u64,
    ) -> Insertion {
        let inner = &self.inner;
        let mut state = inner.state();
        // Under the state lock: `dispose` sets its flag before it takes this
        // lock to unregister what is live, so a mount that raced it either
        // was live then or sees the flag here.
        if inner.disposed.is_cancelled() {
            return Insertion::Refused(registration.release(), Refusal::Disposed);
        }
        let collision = match (
            self.suffix_collision(&state, registration.contract),
            inner.config.suffixes,
        ) {
            (Some((view, domain)), SuffixPolicy::Error) => {
                let refusal = Refusal::SuffixCollision { view, domain };
                return Insertion::Refused(registration.release(), refusal);
            }
            (collision, _) => collision,
        };
        let mut events = Vec::new();
        let mut replaced = None;
        let mut evicted = None;
        let existing = state
            .by_type
            .get(&**component_type)
            .and_then(|instances| instances.get(instance))
            .cloned();
        if let Some(existing) = existing {
            match inner.config.duplicates {
                DuplicatePolicy::Reject => {
                    return Insertion::Refused(registration.release(), Refusal::Duplicate);
                }
                DuplicatePolicy::Replace => {
                    evicted = state.remove(&existing, now);
                    let released = existing.release();
                    events.push(SurfaceEvent::ComponentUnregistered {
                        registration_id: Arc::clone(&existing.id),
                        component_type: Arc::clone(component_type),
                        instance_id: Arc::clone(instance.as_arc()),
                    });
                    replaced = Some((existing, released));
                }
            }
        }
        state.insert(registration);
        if inner.dispatcher.active() {
            events.push(SurfaceEvent::ComponentRegistered {
                registration_id: Arc::clone(&registration.id),
                component_type: Arc::clone(component_type),
                instance_id: Arc::clone(instance.as_arc()),
            });
            if let (Some((view, domain)), SuffixPolicy::Warn) = (&collision, inner.config.suffixes)
            {
                events.push(SurfaceEvent::CollisionSuspected {
                    view_capability_id: Arc::clone(view),
                    domain_procedure_id: Arc::clone(domain),
                });
            }
        }
        inner.bump(&mut state, events);
        Insertion::Inserted(Displaced {
            collision,
            replaced,
            evicted,
        })
    }

    /// Finishes an insertion without the state lock: the replaced
    /// registration's host hooks and destructor, the evicted tombstones,
    /// the collision warning.
    pub(super) fn finish_insert(&self, displaced: Displaced, now: u64) {
        let inner = &self.inner;
        let Displaced {
            collision,
            replaced,
            evicted,
        } = displaced;
        if let Some((replaced, released)) = replaced {
            self.retired(&replaced, now, "replaced");
            // The replaced component's destructor may unmount others: no
            // lock held.
            released.drop_unlocked();
        }
        crate::util::contain::drop_contained("evicted tombstones", evicted);
        if let (Some((view, domain)), SuffixPolicy::Warn) = (&collision, inner.config.suffixes) {
            tracing::warn!(%view, %domain, "a view capability shares its suffix with a domain procedure");
            let mut event = AuditEvent::new(AuditKind::CollisionSuspected, now);
            event.capability_id = Some(Arc::clone(view));
            event.detail = Some(serde_json::Map::from_iter([(
                "domainProcedureId".to_owned(),
                serde_json::Value::from(domain.to_string()),
            )]));
            inner.record(&event);
        }
    }

    /// The first view capability of `contract` sharing its suffix with a
    /// known domain procedure, and that procedure.
    fn suffix_collision(
        &self,
        state: &State,
        contract: &CheckedContract,
    ) -> Option<(Arc<str>, Arc<str>)> {
        if self.inner.config.suffixes == SuffixPolicy::Off || state.known_procedures.is_empty() {
            return None;
        }
        contract.capabilities().iter().find_map(|capability| {
            let suffix = capability.id().path();
            state
                .known_procedures
                .iter()
                .find(|known| known.strip_prefix("domain:") == Some(suffix))
                .map(|known| (Arc::clone(capability.id().as_arc()), Arc::clone(known)))
        })
    }
}
