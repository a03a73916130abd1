//! Resolving a pending record: the person's answer, through an approval
//! channel, for the exact request the person was shown.
//!
//! The answer counts only when the channel may answer this request (an
//! in-app channel any, an agent's own connection only its own consumer's)
//! and names the request as it was shown (id and digest): an answer for
//! request A never resolves request B. A request that needs proof of
//! presence is approved only with a proof the registry's verifier accepts
//! for exactly that request; every other approval of it is refused. The
//! channel, the approver and the proof are kept with the record and
//! written to the audit trail.

use std::sync::Arc;

use serde_json::Value;

use super::{ConfirmationStore, Stage};
use crate::audit::AuditKind;
use crate::clock::rfc3339;
use crate::confirmation::services::ConfirmationServices;
use crate::confirmation::{
    Approver, ChannelKind, ConfirmationOutcome, PersonVerified, PresenceChallenge, PresenceRefusal,
    Resolution, ResolveError, ShownRequest,
};
use crate::events::SurfaceEvent;

/// The answer being given.
enum Answer {
    Deny,
    /// An approval on the channel's word alone.
    Approve,
    /// An approval with the person's proof, already checked.
    ApproveProven(PersonVerified),
}

impl ConfirmationStore {
    /// The person's answer to `shown`, through `approver`'s channel.
    pub(in crate::confirmation) fn resolve<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        shown: &ShownRequest,
        approved: bool,
        approver: &Approver,
    ) -> Result<Resolution, ResolveError> {
        let answer = if approved {
            Answer::Approve
        } else {
            Answer::Deny
        };
        self.answer(services, shown, answer, approver)
    }

    /// The person's approval of `shown` with `proof` of their presence,
    /// checked by the registry's verifier outside the store's lock.
    pub(in crate::confirmation) fn approve_with_presence<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        shown: &ShownRequest,
        approver: &Approver,
        proof: &Value,
    ) -> Result<Resolution, ResolveError> {
        // Only an in-app channel carries the person's own proof: an agent's
        // connection offering one is refused before anything is verified.
        if approver.kind != ChannelKind::InApp {
            return Err(ResolveError::NotPermitted);
        }
        let challenge = self.challenge(services, shown, approver)?;
        let Some(presence) = services.presence() else {
            return Err(ResolveError::PresenceRefused(PresenceRefusal::Unavailable));
        };
        let verified = presence
            .check(&challenge, &approver.approver, proof, services.clock_ms())
            .map_err(ResolveError::PresenceRefused)?;
        self.answer(services, shown, Answer::ApproveProven(verified), approver)
    }

    /// What a proof for `shown` must be bound to, once `approver` may
    /// answer it and it is pending as shown.
    fn challenge<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        shown: &ShownRequest,
        approver: &Approver,
    ) -> Result<PresenceChallenge, ResolveError> {
        self.expire_due(services);
        let now = services.clock_ms();
        let store = self.lock();
        let record = Self::answerable(&store, shown, approver, now)?;
        Ok(record.view.presence_challenge())
    }

    /// The record `shown` names, if `approver` may answer it now.
    fn answerable<'s>(
        store: &'s super::Store,
        shown: &ShownRequest,
        approver: &Approver,
        now: u64,
    ) -> Result<&'s super::Record, ResolveError> {
        let id = &*shown.confirmation_id;
        let Some(record) = store.open.get(id) else {
            let known = store
                .ended
                .as_ref()
                .is_some_and(|ended| ended.peek(id, now).is_some());
            return Err(if known {
                ResolveError::NotPending
            } else {
                ResolveError::Unknown
            });
        };
        if *record.view.digest != *shown.digest {
            return Err(ResolveError::NotShown);
        }
        if !approver.may_answer(&record.view.consumer_key) {
            return Err(ResolveError::NotPermitted);
        }
        if record.stage != Stage::Pending {
            return Err(ResolveError::NotPending);
        }
        Ok(record)
    }

    fn answer<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        shown: &ShownRequest,
        answer: Answer,
        approver: &Approver,
    ) -> Result<Resolution, ResolveError> {
        self.expire_due(services);
        // The clock may be host code: read before the store's lock.
        let now = services.clock_ms();
        let mut store = self.lock();
        let record = Self::answerable(&store, shown, approver, now)?;
        if matches!(answer, Answer::Approve) && record.view.presence_required {
            return Err(ResolveError::PresenceRequired);
        }
        let id = &*shown.confirmation_id;
        let Some(record) = store.open.get_mut(id) else {
            return Err(ResolveError::Unknown);
        };
        let (outcome, person_verified) = match answer {
            Answer::Deny => (ConfirmationOutcome::Denied, None),
            Answer::Approve => (ConfirmationOutcome::Approved, None),
            Answer::ApproveProven(verified) => (ConfirmationOutcome::Approved, Some(verified)),
        };
        let approved = outcome == ConfirmationOutcome::Approved;
        let resolution = Resolution {
            confirmation_id: Arc::clone(&record.view.confirmation_id),
            outcome,
            channel: Some(Arc::clone(&approver.channel)),
            channel_kind: Some(approver.kind),
            approver: Some(Arc::clone(&approver.approver)),
            reason: None,
            person_verified,
            at: rfc3339(now),
        };
        let view = record.view.clone();
        if approved {
            record.stage = Stage::Approved { at_ms: now };
            record.resolution = Some(resolution.clone());
            record.resolved.send_replace(Some(outcome));
        } else if let Some((id, record)) = store.open.remove_entry(id) {
            record.resolved.send_replace(Some(outcome));
            Self::end(
                &mut store,
                services,
                &id,
                record,
                Stage::Denied,
                resolution.clone(),
                now,
            );
        }
        drop(store);
        let kind = if approved {
            AuditKind::ConfirmationApproved
        } else {
            AuditKind::ConfirmationDenied
        };
        Self::audit(services, kind, &view, Some(&resolution));
        services.emit(SurfaceEvent::ConfirmationResolved {
            confirmation_id: Arc::clone(&view.confirmation_id),
            outcome: outcome.as_str(),
            channel: Some(Arc::clone(&approver.channel)),
            approver: Some(Arc::clone(&approver.approver)),
            reason: None,
            proof: resolution
                .person_verified
                .as_ref()
                .map(|p| p.method.as_str()),
        });
        self.notify();
        Ok(resolution)
    }
}
