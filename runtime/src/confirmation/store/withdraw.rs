//! Withdrawing open records: the request can no longer run as it was
//! shown (the registration that would run it was unmounted or replaced — a
//! reload, another tab, a route change — or the host withdrew it), so it
//! leaves the pending list at once, a call waiting on it settles, and the
//! agent's retry with its id is told `CONFIRMATION_INVALID {reason:
//! "withdrawn"}`. Nothing keeps offering a request that cannot run.
//!
//! By owner: one consumer's open confirmations, or one
//! registration's. When an adapter's session
//! ends, nobody can present its evidence any more, so its pending and
//! approved records are withdrawn at once with the reason `agent-left` (a
//! record reserved by a running call waits for that call, which consumes or
//! releases it). A dialog showing one says the agent left.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{ConfirmationStore, Stage, Store};
use crate::audit::AuditKind;
use crate::confirmation::services::ConfirmationServices;
use crate::confirmation::{ConfirmationOutcome, PendingConfirmation, Resolution};
use crate::events::SurfaceEvent;
use crate::util::lru::Lru;

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
        let used_elsewhere = record.used_elsewhere;
        drop(store);
        if used_elsewhere {
            self.consumed_elsewhere(services, confirmation_id);
            return;
        }
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

/// Consumers remembered as forgotten, with their epoch (keys are at most
/// `max_id_bytes`: a few MiB at worst). Beyond it the oldest is let go of,
/// and its epoch becomes the floor below which the store no longer knows
/// who was forgotten: a call that began before the last 16,384 forgettings
/// and asks only now is refused as if its consumer had been forgotten
/// (fail closed: it asks nobody, and its agent retries) — never filed for
/// an identity nobody holds any more. A call of a consumer nobody forgot is
/// never refused while fewer forgettings happened during it.
const FORGOTTEN: usize = 16_384;

use crate::confirmation::AGENT_LEFT;

/// Why a request whose waiting call was cancelled was withdrawn.
pub(crate) const CANCELLED: &str = "cancelled";

impl ConfirmationStore {
    /// The forget epoch now: a call records it when it begins, and asks
    /// nobody if its consumer is forgotten after it.
    pub(crate) fn forget_epoch(&self) -> u64 {
        self.forgets.load(Ordering::Acquire)
    }

    /// Whether `consumer_key` was forgotten after epoch `since` — or may
    /// have been: a call that began before the forgettings the store let
    /// go of counts as forgotten (under the lock requests are filed under).
    pub(super) fn forgotten_since(store: &Store, consumer_key: &str, since: u64) -> bool {
        since < store.forgotten_floor
            || store
                .forgotten
                .as_ref()
                .and_then(|forgotten| forgotten.peek(consumer_key, 0))
                .is_some_and(|&epoch| epoch > since)
    }

    /// Withdraws every pending or approved record of `consumer_key`, and
    /// remembers it as forgotten first, under the lock requests are filed
    /// under: a request its in-flight calls file later is refused, one
    /// filed before is withdrawn here.
    pub(crate) fn withdraw_consumer<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        consumer_key: &str,
    ) {
        {
            let mut store = self.lock();
            let epoch = self.forgets.fetch_add(1, Ordering::AcqRel) + 1;
            let let_go = store
                .forgotten
                .get_or_insert_with(|| Box::new(Lru::new(FORGOTTEN, u64::MAX)))
                .insert(Arc::from(consumer_key), epoch, 0);
            if let Some((_, epoch)) = let_go {
                store.forgotten_floor = store.forgotten_floor.max(epoch);
            }
        }
        self.withdraw_where(services, AGENT_LEFT, |pending| {
            *pending.consumer_key == *consumer_key
        });
    }

    /// A call of `consumer_key` waits on `confirmation_id` for the person:
    /// its subscription, counted as a waiter (`None` when not open).
    pub(in crate::confirmation) fn wait_on(
        &self,
        confirmation_id: &str,
    ) -> Option<tokio::sync::watch::Receiver<Option<crate::confirmation::ConfirmationOutcome>>>
    {
        let mut store = self.lock();
        let record = store.open.get_mut(confirmation_id)?;
        record.waiters += 1;
        Some(record.resolved.subscribe())
    }

    /// A waiting call stops waiting; `withdraw`: because it was cancelled,
    /// so the request is withdrawn (reason `cancelled`) if `consumer_key`
    /// asked for it and no other call still waits on it. A host watching
    /// with `wait_for` is no waiter.
    pub(in crate::confirmation) fn stop_waiting<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &str,
        consumer_key: &str,
        withdraw: bool,
    ) -> crate::confirmation::Withdrawal {
        if let Some(record) = self.lock().open.get_mut(confirmation_id) {
            record.waiters = record.waiters.saturating_sub(1);
        }
        if withdraw {
            self.withdraw_cancelled(services, confirmation_id, consumer_key)
        } else {
            crate::confirmation::Withdrawal::NotOpen
        }
    }

    /// Withdraws the open record `confirmation_id` if `consumer_key` asked
    /// for it and no call waits on it (its waiting call was cancelled).
    pub(crate) fn withdraw_cancelled<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &str,
        consumer_key: &str,
    ) -> crate::confirmation::Withdrawal {
        use crate::confirmation::Withdrawal;
        let awaited = match self.lock().open.get(confirmation_id) {
            Some(record) if *record.view.consumer_key == *consumer_key => record.waiters > 0,
            _ => return Withdrawal::NotOpen,
        };
        if awaited {
            return Withdrawal::Awaited;
        }
        let withdrawn = self.withdraw_where(services, CANCELLED, |pending| {
            *pending.confirmation_id == *confirmation_id && *pending.consumer_key == *consumer_key
        });
        if withdrawn > 0 {
            Withdrawal::Withdrawn
        } else {
            Withdrawal::NotOpen
        }
    }

    /// Withdraws every pending or approved record of `registration_id`
    /// (it was unmounted or replaced). Returns how many.
    pub(crate) fn withdraw_registration<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        registration_id: &str,
        reason: &'static str,
    ) -> usize {
        self.withdraw_where(services, reason, |pending| {
            *pending.registration_id == *registration_id
        })
    }
}
