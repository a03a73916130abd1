//! Phase 2: resolution. A capability id (+ instance, + registration id)
//! becomes one live registration this consumer may see.
//!
//! The scope floor and discovery filter every candidate — live or
//! tombstoned — before any resolution error is built and before any
//! availability predicate runs, so a hidden capability answers exactly as a
//! nonexistent one: the same code, details and retry hint, and none of the
//! component's code runs for it. The state lock is held only to copy the
//! candidates out; policies run unlocked (they may read the registry).

use std::sync::Arc;

use smallvec::SmallVec;

use super::{InFlight, Subject, Target};
use crate::context::HostContext;
use crate::error::ErrorPayload;
use crate::ids::{Plane, in_scope};
use crate::policy::Decision;
use crate::registry::{Registration, Tombstone};

/// The live registrations that could answer a call, copied out under the
/// state lock, and the tombstone a stale token or a recent unmount points
/// at.
/// Inline for the usual few (a named instance: one), so resolving
/// allocates nothing.
type Candidates = (SmallVec<[Arc<Registration>; 4]>, Option<Tombstone>);

/// The candidates this consumer may see.
type Visible = SmallVec<[Target; 2]>;

/// The position of the visible target of instance `instance`.
fn of_instance(visible: &[Target], instance: &str) -> Option<usize> {
    visible
        .iter()
        .position(|t| t.registration.instance().as_str() == instance)
}

/// The position of the only visible target, if there is exactly one.
fn only(visible: &[Target]) -> Option<usize> {
    (visible.len() == 1).then_some(0)
}

impl InFlight<'_> {
    /// Phase 2: capability id (+ instance) → a live registration this
    /// consumer may see; staleness.
    pub(super) fn resolve(&self, host: &HostContext) -> Result<Target, ErrorPayload> {
        let _phase = crate::util::span::phase_span!(2, "resolve").entered();
        // An id outside the grammar names nothing that could be mounted.
        let Some(parsed) = self.parsed else {
            return Err(ErrorPayload::not_found());
        };
        if parsed.plane() == Plane::Domain {
            return self.resolve_domain(host);
        }
        let Some(component_type) = parsed
            .component_type(self.requested_id())
            .filter(|t| in_scope(t, &self.options.scope))
        else {
            return Err(ErrorPayload::not_found());
        };
        let (candidates, tombstone) = self.view_candidates(component_type);
        // A plain loop: the usual one candidate is pushed inline, with no
        // size hint to reserve for.
        let mut visible = Visible::new();
        for registration in candidates {
            if let Some(target) = self
                .view_target(registration)
                .and_then(|target| self.discovered(target, host))
            {
                visible.push(target);
            }
        }
        // A tombstone counts only if this consumer could see what it offered.
        let tombstone = tombstone.filter(|tomb| {
            self.view_target(Arc::clone(tomb.registration()))
                .is_some_and(|target| self.visible(&target, host))
        });
        let chosen = match self.request.registration_id.as_deref() {
            Some(registration_id) => {
                self.choose_by_token(&visible, registration_id, tombstone.as_ref())?
            }
            None => self.choose_by_instance(&visible, tombstone.as_ref())?,
        };
        let target = if chosen < visible.len() {
            visible.swap_remove(chosen)
        } else {
            return Err(ErrorPayload::not_found());
        };
        self.check_version_hint(&target)?;
        Ok(target)
    }

    /// Under the state lock, nothing else: the live registrations of
    /// `component_type` (the named instance, or every instance by instance
    /// id), and the tombstone of the presented registration id — or, with
    /// none presented, of the type's latest unmount.
    fn view_candidates(&self, component_type: &str) -> Candidates {
        let inner = &self.services;
        let instance = self.request.instance_id.as_deref();
        let registration_id = self.request.registration_id.as_deref();
        // Before the lock: a host's clock is never read under it (the
        // default clock's reading is taken only if a tombstone is looked up).
        let now = inner.ms_at_for_lock(self.started);
        let state = inner.state();
        let instances = state.of_type(component_type);
        let candidates: SmallVec<[Arc<Registration>; 4]> = match (instances, instance) {
            (None, _) => SmallVec::new(),
            (Some(instances), Some(i)) => instances.get(i).cloned().into_iter().collect(),
            (Some(instances), None) => {
                let mut all: SmallVec<[Arc<Registration>; 4]> =
                    instances.values().cloned().collect();
                // Deterministic: by instance id.
                all.sort_unstable_by(|a, b| a.instance().cmp(b.instance()));
                all
            }
        };
        let tombstone = match registration_id {
            _ if !state.has_tombstones() => None,
            Some(id) if candidates.iter().any(|r| &**r.id() == id) => None,
            Some(id) => state.tombstone(id, now).cloned(),
            None => state.tombstone_of_type(component_type, now).cloned(),
        };
        (candidates, tombstone)
    }

    /// The visible target a presented registration id names (of the named
    /// instance, if any); a token naming nothing live answers as a dead
    /// registration, pointing at its successor when there is one.
    fn choose_by_token(
        &self,
        visible: &[Target],
        registration_id: &str,
        tombstone: Option<&Tombstone>,
    ) -> Result<usize, ErrorPayload> {
        let instance = self.request.instance_id.as_deref();
        let live = match instance {
            Some(i) => of_instance(visible, i),
            None => visible
                .iter()
                .position(|t| &**t.registration.id() == registration_id),
        };
        match live {
            Some(index)
                if visible
                    .get(index)
                    .is_some_and(|t| &**t.registration.id() == registration_id) =>
            {
                Ok(index)
            }
            _ => {
                let successor = match instance.or(tombstone.map(|t| t.instance().as_str())) {
                    Some(i) => of_instance(visible, i),
                    None => only(visible),
                };
                Err(super::dead_registration(
                    self.services.ids().minted_here(registration_id),
                    successor
                        .and_then(|index| visible.get(index))
                        .map(|t| &**t.registration.id()),
                    tombstone.is_some(),
                ))
            }
        }
    }

    /// The visible target of the named instance, or the only one; several
    /// without a name are ambiguous, none was recently unmounted or is not
    /// found.
    fn choose_by_instance(
        &self,
        visible: &[Target],
        tombstone: Option<&Tombstone>,
    ) -> Result<usize, ErrorPayload> {
        let instance = self.request.instance_id.as_deref();
        match instance.map_or_else(|| only(visible), |i| of_instance(visible, i)) {
            Some(index) => Ok(index),
            None if instance.is_none() && visible.len() > 1 => Err(self.ambiguous(visible)),
            None => {
                let recently =
                    tombstone.is_some_and(|t| instance.is_none_or(|i| t.instance().as_str() == i));
                Err(if recently {
                    ErrorPayload::unmounted(crate::error::UnmountedPhase::Resolve)
                } else {
                    ErrorPayload::not_found()
                })
            }
        }
    }

    /// Phase 2 for `domain:` ids: the live registrations exposing a
    /// reference to the procedure that this consumer may see; one per call.
    fn resolve_domain(&self, host: &HostContext) -> Result<Target, ErrorPayload> {
        let (holders, tombstone) = self.domain_candidates();
        let in_floor = |registration: &Registration| {
            in_scope(
                registration.contract().component_type().as_str(),
                &self.options.scope,
            )
        };
        let mut visible: Visible = holders
            .iter()
            .filter(|registration| in_floor(registration))
            .filter_map(|registration| self.domain_target(registration))
            .filter_map(|target| self.discovered(target, host))
            .collect();
        let tombstone: Option<Tombstone> = tombstone.filter(|tomb| {
            tomb.exposed(self.requested_id())
                && in_floor(tomb.registration())
                && self
                    .domain_target(tomb.registration())
                    .is_some_and(|target| self.visible(&target, host))
        });
        let instance = self.request.instance_id.as_deref();
        let of_named_instance =
            |t: &Target| instance.is_none_or(|i| t.registration.instance().as_str() == i);

        let chosen = if let Some(registration_id) = self.request.registration_id.as_deref() {
            match visible
                .iter()
                .position(|t| &**t.registration.id() == registration_id)
            {
                Some(index) if visible.get(index).is_some_and(of_named_instance) => Some(index),
                Some(_) => None,
                None => {
                    return Err(self.dead_domain_token(
                        &visible,
                        registration_id,
                        tombstone.as_ref(),
                    ));
                }
            }
        } else {
            visible.retain(|t| of_named_instance(t));
            match visible.len() {
                0 => None,
                1 => Some(0),
                _ => return Err(self.ambiguous(&visible)),
            }
        };
        let Some(target) = chosen.filter(|&index| index < visible.len()) else {
            return Err(ErrorPayload::not_found());
        };
        let target = visible.swap_remove(target);
        self.check_version_hint(&target)?;
        Ok(target)
    }

    /// Under the state lock, nothing else: the registrations holding a
    /// reference to the procedure, and the tombstone of a presented
    /// registration id that holds none of them.
    fn domain_candidates(&self) -> Candidates {
        let inner = &self.services;
        let registration_id = self.request.registration_id.as_deref();
        // Before the lock: a host's clock is never read under it (the
        // default clock's reading is taken only if a tombstone is looked up).
        let now = inner.ms_at_for_lock(self.started);
        let state = inner.state();
        let holders: SmallVec<[Arc<Registration>; 4]> = state
            .exposing(self.requested_id())
            .map(|holders| holders.iter().cloned().collect())
            .unwrap_or_default();
        let tombstone = match registration_id {
            Some(id) if !holders.iter().any(|r| &**r.id() == id) => {
                state.tombstone(id, now).cloned()
            }
            _ => None,
        };
        (holders, tombstone)
    }

    /// A presented registration id that holds no visible reference: a dead
    /// registration, pointing at the same component (type and instance)
    /// mounted again — or, for a token from another registry, at the only
    /// reference this consumer sees.
    fn dead_domain_token(
        &self,
        visible: &[Target],
        registration_id: &str,
        tombstone: Option<&Tombstone>,
    ) -> ErrorPayload {
        let successor = tombstone.and_then(|tomb| {
            visible.iter().find(|t| {
                t.registration.contract().component_type()
                    == tomb.registration().contract().component_type()
                    && t.registration.instance() == tomb.instance()
            })
        });
        let minted_here = self.services.ids().minted_here(registration_id);
        let live = match (minted_here, visible) {
            (false, [sole]) => Some(&**sole.registration.id()),
            _ => successor.map(|t| &**t.registration.id()),
        };
        super::dead_registration(minted_here, live, tombstone.is_some())
    }

    /// The view target of `registration` for this call's capability id.
    fn view_target(&self, registration: Arc<Registration>) -> Option<Target> {
        let capabilities = registration.contract().capabilities();
        let index = capabilities
            .iter()
            .position(|c| c.id().as_str() == self.requested_id())?;
        let capability = registration.capability(index)?;
        Some(Target {
            registration,
            subject: Subject::View { index, capability },
            disabled: None,
        })
    }

    /// The domain target of `registration` for this call's procedure id.
    fn domain_target(&self, registration: &Arc<Registration>) -> Option<Target> {
        registration
            .reference(self.requested_id())
            .map(|reference| Target {
                registration: Arc::clone(registration),
                subject: Subject::Domain(Arc::clone(reference)),
                disabled: None,
            })
    }

    /// Whether this consumer's discovery chain shows the target.
    fn visible(&self, target: &Target, host: &HostContext) -> bool {
        self.discover(&target.registration, &target.subject, host) != Decision::Hide
    }

    /// The target with discovery's verdict for this consumer, or `None` when
    /// it is hidden. Phase 4 reuses the verdict instead of asking again.
    fn discovered(&self, mut target: Target, host: &HostContext) -> Option<Target> {
        match self.discover(&target.registration, &target.subject, host) {
            Decision::Hide => None,
            Decision::Disable(reason) => {
                target.disabled = Some(reason);
                Some(target)
            }
            Decision::Expose => Some(target),
        }
    }

    /// The version hint, enforced for destructive and external effects —
    /// only once the target is known to be visible. A call presenting an
    /// approval of this registration's capability for this consumer is
    /// decided in phase 6: the person's approval of this exact request
    /// (registration, input, effect) outweighs a version move the person
    /// could not see; anything else is refused here, before anything runs.
    fn check_version_hint(&self, target: &Target) -> Result<(), ErrorPayload> {
        if let Some(hint) = self.request.surface_version.as_deref()
            && target.subject.capability().effect().enforces_version_hint()
            && hint != itoa::Buffer::new().format(self.services.version())
        {
            if let Some(confirmation_id) = self.request.confirmation_id.as_deref()
                && self.services.confirmations().is_approved_for(
                    confirmation_id,
                    target.registration.id(),
                    self.capability_id(),
                    self.consumer.key(),
                )
            {
                self.version_moved
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                return Ok(());
            }
            return Err(ErrorPayload::stale(
                crate::error::StaleReason::SurfaceVersionMismatch,
                Some(target.registration.id()),
            ));
        }
        Ok(())
    }

    /// `AMBIGUOUS_INSTANCE`, listing the candidates (all visible).
    fn ambiguous(&self, candidates: &[Target]) -> ErrorPayload {
        let instances: Vec<serde_json::Value> = candidates
            .iter()
            .map(|target| {
                let registration = &target.registration;
                let description = match &target.subject {
                    Subject::Domain(reference) => reference
                        .contextual_note()
                        .unwrap_or_else(|| registration.contract().description().to_string()),
                    Subject::View { .. } => registration.contract().description().to_string(),
                };
                serde_json::json!({
                    "instanceId": registration.instance().as_str(),
                    "registrationId": &**registration.id(),
                    "description": description,
                })
            })
            .collect();
        match instances.len() {
            0 => ErrorPayload::not_found(),
            _ => ErrorPayload::ambiguous(instances),
        }
    }
}
