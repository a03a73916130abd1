//! Expiry: a request whose time is up (or every request, when the
//! registry goes away) ends as expired; a reserved one waits for its call.

use std::sync::Arc;

use super::{ConfirmationStore, Stage, Store};
use crate::audit::AuditKind;
use crate::confirmation::services::ConfirmationServices;
use crate::confirmation::{ConfirmationOutcome, PendingConfirmation};
use crate::events::SurfaceEvent;

impl ConfirmationStore {
    /// Expires records whose time is up (also done by timers; this keeps a
    /// manual clock honest).
    pub(in crate::confirmation) fn expire_due<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
    ) {
        let now = services.clock_ms();
        let due: Vec<Arc<str>> = self
            .lock()
            .open
            .iter()
            .filter(|(_, record)| now >= record.expires_at_ms)
            .map(|(id, _)| Arc::clone(id))
            .collect();
        for id in due {
            self.expire(services, &id);
        }
    }

    /// Expires one record if its time is up or the registry is going away.
    /// A reserved record waits for its call (which releases or consumes it),
    /// unless the registry is disposed.
    pub(crate) fn expire<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &Arc<str>,
    ) {
        let now = services.clock_ms();
        let disposed = services.disposed();
        let mut store = self.lock();
        let due = store.open.get(confirmation_id).is_some_and(|record| {
            let held = matches!(record.stage, Stage::Reserved { .. });
            disposed || (!held && now >= record.expires_at_ms)
        });
        if !due {
            return;
        }
        let Some(expired) = Self::expire_locked(&mut store, services, confirmation_id, now) else {
            return;
        };
        drop(store);
        Self::announce_expired(services, expired);
        self.notify();
    }

    /// Ends an open record as expired, under the store's lock; what to
    /// announce once the lock is released.
    fn expire_locked<S: ConfirmationServices + ?Sized>(
        store: &mut Store,
        services: &S,
        confirmation_id: &str,
        now_ms: u64,
    ) -> Option<(PendingConfirmation, bool)> {
        let (id, record) = store.open.remove_entry(confirmation_id)?;
        let was_pending = record.stage == Stage::Pending;
        let view = record.view.clone();
        record
            .resolved
            .send_replace(Some(ConfirmationOutcome::Expired));
        let resolution = Self::unanswered(&id, ConfirmationOutcome::Expired, None, now_ms);
        Self::end(
            store,
            services,
            &id,
            record,
            Stage::Expired,
            resolution,
            now_ms,
        );
        Some((view, was_pending))
    }

    /// Audits an expiry and, for a record still pending, announces it.
    fn announce_expired<S: ConfirmationServices + ?Sized>(
        services: &S,
        (view, was_pending): (PendingConfirmation, bool),
    ) {
        Self::audit(services, AuditKind::ConfirmationExpired, &view, None);
        if was_pending {
            services.emit(SurfaceEvent::ConfirmationResolved {
                confirmation_id: Arc::clone(&view.confirmation_id),
                outcome: ConfirmationOutcome::Expired.as_str(),
                channel: None,
                approver: None,
                reason: None,
                proof: None,
            });
        }
    }

    /// Expires everything (dispose).
    pub(crate) fn expire_all<S: ConfirmationServices + ?Sized>(&self, services: &S) {
        let ids: Vec<Arc<str>> = self.lock().open.keys().cloned().collect();
        for id in ids {
            self.expire(services, &id);
        }
    }
}
