//! Waiting for the person on behalf of a call: an adapter's wait mode, an
//! MCP elicitation. The wait ends one of three ways, and none of them leaves
//! the person asked for something nobody waits for:
//! - the request is answered, expires or is withdrawn: [`WaitGuard::outcome`]
//!   says which, and the adapter retries with the evidence;
//! - the caller cancels: [`WaitGuard::cancel`] withdraws the request (reason
//!   `cancelled`) unless another call still waits on it, and says which;
//! - the caller's future is dropped (its task aborted): the guard's drop
//!   does what `cancel` does and hands the [`Withdrawal`] to the adapter's
//!   `on_abandoned` hook, which settles the call.

use tokio::sync::watch;

use super::{ConfirmationOutcome, Confirmations, Withdrawal};
use crate::context::Consumer;

/// Settles a call whose wait was abandoned (see [`WaitGuard`]).
type Abandoned = Box<dyn FnOnce(Withdrawal) + Send>;

/// One call's wait for the person; see the [module](self) docs. Made by
/// [`Confirmations::wait_guard`].
#[must_use = "dropping the guard abandons the wait"]
pub struct WaitGuard {
    confirmations: Confirmations,
    confirmation_id: String,
    consumer: Consumer,
    /// This call's own subscription: let go of before withdrawing, so it
    /// never counts as another waiter.
    watching: Option<watch::Receiver<Option<ConfirmationOutcome>>>,
    on_abandoned: Option<Abandoned>,
    armed: bool,
}

impl std::fmt::Debug for WaitGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitGuard")
            .field("confirmation_id", &self.confirmation_id)
            .field("armed", &self.armed)
            .finish_non_exhaustive()
    }
}

impl Confirmations {
    /// A wait for the person on `confirmation_id`, asked by `consumer`.
    /// `on_abandoned` runs (synchronously, in the guard's drop) if the
    /// guard is dropped before the wait ended or was cancelled.
    pub fn wait_guard(
        &self,
        confirmation_id: &str,
        consumer: &Consumer,
        on_abandoned: impl FnOnce(Withdrawal) + Send + 'static,
    ) -> WaitGuard {
        let watching = self.store().watcher(confirmation_id);
        WaitGuard {
            confirmations: self.clone(),
            confirmation_id: confirmation_id.to_owned(),
            consumer: consumer.clone(),
            watching,
            on_abandoned: Some(Box::new(on_abandoned)),
            armed: true,
        }
    }
}

impl WaitGuard {
    /// Waits until the request is answered, expires or is withdrawn
    /// (`None` if it was already gone). The wait is over: dropping the
    /// guard afterwards does nothing.
    pub async fn outcome(&mut self) -> Option<ConfirmationOutcome> {
        let outcome = match self.watching.as_mut() {
            Some(watching) => match watching.wait_for(Option::is_some).await {
                Ok(outcome) => *outcome,
                Err(_) => Some(ConfirmationOutcome::Expired),
            },
            None => self
                .confirmations
                .resolution(&self.confirmation_id)
                .map(|resolution| resolution.outcome),
        };
        self.armed = false;
        self.watching = None;
        outcome
    }

    /// The caller cancelled: withdraws the request unless another call
    /// still waits on it, and says which (the adapter then settles the
    /// call: through the pipeline when withdrawn or no longer open, on its
    /// own when another call waits).
    pub fn cancel(mut self) -> Withdrawal {
        self.armed = false;
        self.withdraw()
    }

    fn withdraw(&mut self) -> Withdrawal {
        self.watching = None;
        self.confirmations
            .withdraw_cancelled(&self.confirmation_id, &self.consumer)
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let withdrawal = self.withdraw();
        if let Some(settle) = self.on_abandoned.take() {
            crate::util::contain::contained("abandoned wait", move || settle(withdrawal));
        }
    }
}
