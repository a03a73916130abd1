//! Withdrawing open records: the request can no longer run as it was
//! shown (the registration that would run it was unmounted or replaced — a
//! reload, another tab, a route change — or the host withdrew it), so it
//! leaves the pending list at once, a call waiting on it settles, and the
//! agent's retry with its id is told `CONFIRMATION_INVALID {reason:
//! "withdrawn"}`. Nothing keeps offering a request that cannot run.

use std::sync::Arc;

use super::{ConfirmationStore, Stage};
use crate::audit::AuditKind;
use crate::confirmation::services::ConfirmationServices;
use crate::confirmation::{ConfirmationOutcome, PendingConfirmation, Resolution};
use crate::events::SurfaceEvent;

impl ConfirmationStore {
    /// Withdraws every open record that `matches`, with `reason`. A record
    /// reserved by a running call is left to that call (it consumes or
    /// releases it; a released one is withdrawn by the next sweep of the
    /// same registration, which is gone by then). Returns how many.
    pub(crate) fn withdraw_where<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        reason: &'static str,
        matches: impl Fn(&PendingConfirmation) -> bool,
    ) -> usize {
        // The clock may be host code: read before the store's lock.
        let now = services.clock_ms();
        let mut store = self.lock();
        let ids: Vec<Arc<str>> = store
            .open
            .iter()
            .filter(|(_, record)| {
                !matches!(record.stage, Stage::Reserved { .. }) && matches(&record.view)
            })
            .map(|(id, _)| Arc::clone(id))
            .collect();
        let mut withdrawn: Vec<(PendingConfirmation, Resolution)> = Vec::with_capacity(ids.len());
        for id in ids {
            let Some((id, record)) = store.open.remove_entry(&id) else {
                continue;
            };
            record
                .resolved
                .send_replace(Some(ConfirmationOutcome::Withdrawn));
            let resolution =
                Self::unanswered(&id, ConfirmationOutcome::Withdrawn, Some(reason), now);
            let view = record.view.clone();
            Self::end(
                &mut store,
                services,
                &id,
                record,
                Stage::Withdrawn,
                resolution.clone(),
                now,
            );
            withdrawn.push((view, resolution));
        }
        drop(store);
        let count = withdrawn.len();
        for (view, resolution) in withdrawn {
            Self::audit(
                services,
                AuditKind::ConfirmationWithdrawn,
                &view,
                Some(&resolution),
            );
            services.emit(SurfaceEvent::ConfirmationResolved {
                confirmation_id: Arc::clone(&view.confirmation_id),
                outcome: ConfirmationOutcome::Withdrawn.as_str(),
                channel: None,
                approver: None,
                reason: Some(reason),
            });
        }
        if count > 0 {
            self.notify();
        }
        count
    }
}
