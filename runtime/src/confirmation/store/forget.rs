//! Withdrawing by owner: one consumer's open confirmations, or one
//! registration's. When an adapter's session
//! ends, nobody can present its evidence any more, so its pending and
//! approved records are withdrawn at once with the reason `agent-left` (a
//! record reserved by a running call waits for that call, which consumes or
//! releases it). A dialog showing one says the agent left.

use super::ConfirmationStore;
use crate::confirmation::services::ConfirmationServices;

/// Why a forgotten consumer's requests were withdrawn.
pub(crate) const AGENT_LEFT: &str = "agent-left";

/// Why a request whose waiting call was cancelled was withdrawn.
pub(crate) const CANCELLED: &str = "cancelled";

impl ConfirmationStore {
    /// Withdraws every pending or approved record of `consumer_key`.
    pub(crate) fn withdraw_consumer<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        consumer_key: &str,
    ) {
        self.withdraw_where(services, AGENT_LEFT, |pending| {
            *pending.consumer_key == *consumer_key
        });
    }

    /// Withdraws the open record `confirmation_id` if `consumer_key` asked
    /// for it (its waiting call was cancelled). Returns whether it did.
    pub(crate) fn withdraw_cancelled<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &str,
        consumer_key: &str,
    ) -> bool {
        self.withdraw_where(services, CANCELLED, |pending| {
            *pending.confirmation_id == *confirmation_id && *pending.consumer_key == *consumer_key
        }) > 0
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
