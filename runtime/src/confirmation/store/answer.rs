//! Resolving a pending record: the person's answer, through an approval
//! channel, for the exact request the person was shown.
//!
//! The answer counts only when the channel may answer this request (an
//! in-app channel any, an agent's own connection only its own consumer's)
//! and names the request as it was shown (id and digest): an answer for
//! request A never resolves request B. The channel and the approver are
//! kept with the record and written to the audit trail.

use std::sync::Arc;

use super::{ConfirmationStore, Stage};
use crate::audit::AuditKind;
use crate::clock::rfc3339;
use crate::confirmation::services::ConfirmationServices;
use crate::confirmation::{Approver, ConfirmationOutcome, Resolution, ResolveError, ShownRequest};
use crate::events::SurfaceEvent;

impl ConfirmationStore {
    /// The person's answer to `shown`, through `approver`'s channel.
    pub(in crate::confirmation) fn resolve<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        shown: &ShownRequest,
        approved: bool,
        approver: &Approver,
    ) -> Result<Resolution, ResolveError> {
        self.expire_due(services);
        // The clock may be host code: read before the store's lock.
        let now = services.clock_ms();
        let mut store = self.lock();
        let id = &*shown.confirmation_id;
        let Some(record) = store.open.get_mut(id) else {
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
        let outcome = if approved {
            ConfirmationOutcome::Approved
        } else {
            ConfirmationOutcome::Denied
        };
        let resolution = Resolution {
            confirmation_id: Arc::clone(&record.view.confirmation_id),
            outcome,
            channel: Some(Arc::clone(&approver.channel)),
            channel_kind: Some(approver.kind),
            approver: Some(Arc::clone(&approver.approver)),
            reason: None,
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
        });
        self.notify();
        Ok(resolution)
    }
}
