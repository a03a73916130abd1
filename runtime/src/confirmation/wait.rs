//! Waiting for the person on behalf of a call: an adapter's wait mode, an
//! MCP elicitation. A guard counts as a waiter on the request while it
//! lives (a host watching with [`Confirmations::wait_for`] does not), and
//! its wait ends one of four ways — none of which leaves the person asked
//! for something nobody waits for:
//! - the request is answered, expires or is withdrawn: [`WaitGuard::outcome`]
//!   says which, and the adapter retries with the evidence;
//! - the wait ended another way (the client's own person answered an
//!   elicitation): [`WaitGuard::finish`] — nothing is withdrawn;
//! - the caller cancels: [`WaitGuard::cancel`] withdraws the request (reason
//!   `cancelled`) unless another call still waits on it, and says which;
//! - the caller's future is dropped (its task aborted): the guard's drop
//!   does what `cancel` does and hands the [`Withdrawal`] to the adapter's
//!   `on_abandoned` hook, which settles the call (synchronously: see
//!   [`settle_now`]).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use tokio::sync::watch;

use super::{ConfirmationOutcome, Confirmations, Withdrawal};
use crate::context::Consumer;

/// Settles a call whose wait was abandoned (see [`WaitGuard`]).
type Abandoned = Box<dyn FnOnce(Withdrawal) + Send>;

/// One call's wait for the person; see the module docs. Made by
/// [`Confirmations::wait_guard`].
#[must_use = "dropping the guard abandons the wait"]
pub struct WaitGuard {
    confirmations: Confirmations,
    confirmation_id: String,
    consumer: Consumer,
    /// This call's subscription (`None`: the request was not open).
    watching: Option<watch::Receiver<Option<ConfirmationOutcome>>>,
    on_abandoned: Option<Abandoned>,
    /// Still counted as a waiter.
    waiting: bool,
}

impl std::fmt::Debug for WaitGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitGuard")
            .field("confirmation_id", &self.confirmation_id)
            .field("waiting", &self.waiting)
            .finish_non_exhaustive()
    }
}

impl Confirmations {
    /// A wait for the person on `confirmation_id`, asked by `consumer`,
    /// counted as a waiter until it ends. `on_abandoned` runs
    /// (synchronously, in the guard's drop) if the guard is dropped before
    /// its wait ended.
    pub fn wait_guard(
        &self,
        confirmation_id: &str,
        consumer: &Consumer,
        on_abandoned: impl FnOnce(Withdrawal) + Send + 'static,
    ) -> WaitGuard {
        let watching = self.store().wait_on(confirmation_id);
        WaitGuard {
            confirmations: self.clone(),
            confirmation_id: confirmation_id.to_owned(),
            consumer: consumer.clone(),
            waiting: watching.is_some(),
            watching,
            on_abandoned: Some(Box::new(on_abandoned)),
        }
    }
}

impl WaitGuard {
    /// Waits until the request is answered, expires or is withdrawn
    /// (`None` if it was already gone). The wait is over then.
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
        self.stop(false);
        outcome
    }

    /// The wait ended another way (the client's own person answered):
    /// nothing is withdrawn.
    pub fn finish(mut self) {
        self.stop(false);
    }

    /// The caller cancelled: withdraws the request unless another call
    /// still waits on it, and says which (the adapter then settles the
    /// call: through the pipeline when withdrawn or no longer open, on its
    /// own when another call waits).
    pub fn cancel(mut self) -> Withdrawal {
        self.stop(true)
    }

    /// Stops counting as a waiter; `withdraw`: and withdraws the request
    /// if nobody else waits on it.
    fn stop(&mut self, withdraw: bool) -> Withdrawal {
        self.watching = None;
        if !std::mem::take(&mut self.waiting) {
            return Withdrawal::NotOpen;
        }
        self.confirmations.store().stop_waiting(
            &*self.confirmations.services,
            &self.confirmation_id,
            self.consumer.key(),
            withdraw,
        )
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        let Some(settle) = self.on_abandoned.take() else {
            return;
        };
        if !self.waiting {
            return;
        }
        let withdrawal = self.stop(true);
        crate::util::contain::contained("abandoned wait", move || settle(withdrawal));
    }
}

/// Runs a settlement that completes without waiting (a call whose token is
/// already cancelled settles in its first poll): polled once, here, so an
/// abandoned wait is settled before its drop returns — in or outside a
/// runtime. A future that would still wait is dropped (a call dropped after
/// it began settles `CANCELLED` on its own).
pub fn settle_now<F: Future>(settlement: F) -> Option<F::Output> {
    let mut settlement = pin!(settlement);
    match settlement
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}
