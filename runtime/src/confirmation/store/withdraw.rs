//! Withdrawing open records: the request can no longer run as it was
//! shown (the registration that would run it was unmounted or replaced — a
//! reload, another tab, a route change — or the host withdrew it), so it
//! leaves the pending list at once, a call waiting on it settles, and the
//! agent's retry with its id is told `CONFIRMATION_INVALID {reason:
//! "withdrawn"}`. Nothing keeps offering a request that cannot run.

use std::sync::Arc;

use super::{ConfirmationStore, Stage, Store};
use crate::audit::AuditKind;
use crate::confirmation::services::ConfirmationServices;
use crate::confirmation::{ConfirmationOutcome, PendingConfirmation, Resolution};
use crate::events::SurfaceEvent;

impl ConfirmationStore {
    /// Withdraws every open record that `matches`, with `reason`. A record
    /// reserved by a running call is left to that call: consumed, it is
    /// spent; released, it is withdrawn then (never approved again).
    /// Returns how many were withdrawn now.
    pub(crate) fn withdraw_where<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        reason: &'static str,
        matches: impl Fn(&PendingConfirmation) -> bool,
    ) -> usize {
        // A store nobody ever filed a request in holds nothing to withdraw
        // (every unmount asks).
        if !self.made() {
            return 0;
        }
        // The clock may be host code: read before the store's lock.
        let now = services.clock_ms();
        let mut store = self.lock();
        let mut ids: Vec<Arc<str>> = Vec::new();
        for (id, record) in &mut store.open {
            if !matches(&record.view) {
                continue;
            }
            if matches!(record.stage, Stage::Reserved { .. }) {
                record.withdrawn.get_or_insert(reason);
            } else {
                ids.push(Arc::clone(id));
            }
        }
        let withdrawn = Self::withdraw_locked(&mut store, services, ids, reason, now);
        drop(store);
        let count = withdrawn.len();
        Self::announce_withdrawn(services, withdrawn, reason);
        if count > 0 {
            self.notify();
        }
        count
    }

    /// Ends the open records `ids` as withdrawn with `reason`, under the
    /// store's lock; what to announce once it is released.
    pub(super) fn withdraw_locked<S: ConfirmationServices + ?Sized>(
        store: &mut Store,
        services: &S,
        ids: Vec<Arc<str>>,
        reason: &'static str,
        now: u64,
    ) -> Vec<(PendingConfirmation, Resolution)> {
        let mut withdrawn = Vec::with_capacity(ids.len());
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
                store,
                services,
                &id,
                record,
                Stage::Withdrawn,
                resolution.clone(),
                now,
            );
            withdrawn.push((view, resolution));
        }
        withdrawn
    }

    /// Audits and announces withdrawals (no lock held).
    pub(super) fn announce_withdrawn<S: ConfirmationServices + ?Sized>(
        services: &S,
        withdrawn: Vec<(PendingConfirmation, Resolution)>,
        reason: &'static str,
    ) {
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
                proof: None,
            });
        }
    }

    /// The call failed before execution: the evidence is approved again
    /// (or expires now if its time ran out meanwhile) — unless it was
    /// withdrawn while the call held it, which takes effect now.
    pub(in crate::confirmation) fn release<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &Arc<str>,
    ) {
        let mut store = self.lock();
        let Some(record) = store.open.get_mut(confirmation_id) else {
            return;
        };
        if let Stage::Reserved { at_ms } = record.stage {
            record.stage = Stage::Approved { at_ms };
        }
        let withdrawn = record.withdrawn;
        drop(store);
        match withdrawn {
            Some(reason) => {
                self.withdraw_where(services, reason, |pending| {
                    *pending.confirmation_id == **confirmation_id
                });
            }
            None => self.expire(services, confirmation_id),
        }
    }
}
