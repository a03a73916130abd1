//! Withdrawing by owner: one consumer's open confirmations, or one
//! registration's. When an adapter's session
//! ends, nobody can present its evidence any more, so its pending and
//! approved records are withdrawn at once with the reason `agent-left` (a
//! record reserved by a running call waits for that call, which consumes or
//! releases it). A dialog showing one says the agent left.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{ConfirmationStore, Store};
use crate::confirmation::services::ConfirmationServices;
use crate::util::lru::Lru;

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
