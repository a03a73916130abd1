//! Phase 8: concurrency.
//!
//! - Actions run serially per component instance (FIFO) by default, with a
//!   bounded wait queue; an action may declare another group: one queue per
//!   capability, a named key shared by capabilities of the instance, or
//!   `parallel(max)` slots, each with its own queue depth.
//! - Observations pass admission: at most `max_concurrent_observations_per_consumer`
//!   running per consumer and `max_concurrent_observations_total` overall,
//!   with a bounded FIFO wait queue per consumer. They never take an action
//!   queue slot.
//!
//! Overflow is `RATE_LIMITED {reason: "queue-full", retryAfterMs}`.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Semaphore, oneshot};

use crate::contract::Concurrency;

/// Suggested wait after a full queue, in milliseconds.
pub(crate) const QUEUE_FULL_RETRY_MS: u64 = 250;

/// Identifies one action queue of a registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueueKey {
    Instance,
    Capability(usize),
    Key(&'static str),
}

impl QueueKey {
    pub(crate) fn of(concurrency: Concurrency, index: usize) -> QueueKey {
        match concurrency {
            Concurrency::Instance => QueueKey::Instance,
            Concurrency::Capability | Concurrency::Parallel(_) => QueueKey::Capability(index),
            Concurrency::Key(key) => QueueKey::Key(key),
        }
    }
}

/// A FIFO queue in front of `slots` concurrent executions.
#[derive(Debug)]
pub(crate) struct ActionQueue {
    slots: Semaphore,
    waiting: AtomicUsize,
    depth: usize,
}

/// Why a slot was not granted.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum QueueRefusal {
    Full,
    Closed,
}

impl ActionQueue {
    pub(crate) fn new(slots: usize, depth: usize) -> ActionQueue {
        ActionQueue {
            slots: Semaphore::new(slots.max(1)),
            waiting: AtomicUsize::new(0),
            depth,
        }
    }

    /// Takes a slot at once, or joins the FIFO queue if it has room. The
    /// returned future resolves when the slot is granted; dropping it leaves
    /// the queue.
    pub(crate) fn enter(self: Arc<Self>) -> Result<QueueEntry, QueueRefusal> {
        // A granted permit is held by the returned slot instead (it gives
        // it back on drop).
        let granted = self.slots.try_acquire().map(|permit| permit.forget());
        if granted.is_ok() {
            return Ok(QueueEntry::Ready(ActionPermit { queue: self }));
        }
        let before = self.waiting.fetch_add(1, Ordering::AcqRel);
        if before >= self.depth {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(QueueRefusal::Full);
        }
        Ok(QueueEntry::Queued(Waiting { queue: self }))
    }
}

/// A granted slot of an action queue: it holds its queue (no other counter
/// to bump) and gives the slot back when dropped.
#[derive(Debug)]
pub(crate) struct ActionPermit {
    queue: Arc<ActionQueue>,
}

impl Drop for ActionPermit {
    fn drop(&mut self) {
        self.queue.slots.add_permits(1);
    }
}

/// A granted slot or a place in the queue.
pub(crate) enum QueueEntry {
    Ready(ActionPermit),
    Queued(Waiting),
}

/// A place in an action queue; leaving (drop) frees it.
pub(crate) struct Waiting {
    queue: Arc<ActionQueue>,
}

impl Waiting {
    /// Waits for the slot, FIFO.
    pub(crate) async fn slot(&self) -> Result<ActionPermit, QueueRefusal> {
        let permit = self
            .queue
            .slots
            .acquire()
            .await
            .map_err(|_| QueueRefusal::Closed)?;
        permit.forget();
        Ok(ActionPermit {
            queue: Arc::clone(&self.queue),
        })
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.queue.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Limits of observation admission.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdmissionLimits {
    pub(crate) per_consumer: usize,
    pub(crate) total: usize,
    pub(crate) queued_per_consumer: usize,
}

#[derive(Default)]
struct ConsumerSlots {
    running: usize,
    queued: usize,
}

struct Waiter {
    id: u64,
    consumer: Arc<str>,
    grant: oneshot::Sender<()>,
}

#[derive(Default)]
struct AdmissionState {
    consumers: FxHashMap<Arc<str>, ConsumerSlots>,
    running: usize,
    waiters: VecDeque<Waiter>,
    next_waiter: u64,
    closed: bool,
}

/// Observation admission: independent per-consumer and global gates.
#[derive(Default)]
pub(crate) struct Admission {
    state: Mutex<AdmissionState>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission")
    }
}

/// An admitted observation; dropping it frees the slots and admits the next
/// waiter (FIFO across consumers, skipping consumers at their cap).
/// It borrows the admission and the consumer key from the call (no
/// counter to bump).
pub(crate) struct Admitted<'a> {
    admission: &'a Admission,
    consumer: &'a Arc<str>,
    limits: AdmissionLimits,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.admission.release(self.consumer, self.limits);
    }
}

/// The outcome of asking for admission.
pub(crate) enum Ticket<'a> {
    Admitted(Admitted<'a>),
    Queued(QueuedTicket<'a>),
}

/// A queued observation; dropping it before the grant leaves the queue.
pub(crate) struct QueuedTicket<'a> {
    admission: &'a Admission,
    consumer: &'a Arc<str>,
    limits: AdmissionLimits,
    id: u64,
    grant: Option<oneshot::Receiver<()>>,
}

impl<'a> QueuedTicket<'a> {
    /// Waits for the grant, FIFO.
    pub(crate) async fn admitted(mut self) -> Result<Admitted<'a>, QueueRefusal> {
        let granted = match self.grant.as_mut() {
            Some(grant) => grant.await.is_ok(),
            None => false,
        };
        if !granted {
            return Err(QueueRefusal::Closed);
        }
        self.grant = None;
        Ok(Admitted {
            admission: self.admission,
            consumer: self.consumer,
            limits: self.limits,
        })
    }
}

impl Drop for QueuedTicket<'_> {
    fn drop(&mut self) {
        let Some(mut grant) = self.grant.take() else {
            return; // converted into an admission
        };
        // Close first: a grant sent before this point is ours to give back;
        // one attempted after it fails and is not counted by the admitter.
        grant.close();
        let granted = grant.try_recv().is_ok();
        self.admission
            .abandon(self.consumer, self.id, granted, self.limits);
    }
}

impl Admission {
    pub(crate) fn enter<'a>(
        &'a self,
        consumer: &'a Arc<str>,
        limits: AdmissionLimits,
    ) -> Result<Ticket<'a>, QueueRefusal> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.closed {
            return Err(QueueRefusal::Closed);
        }
        let state = &mut *state;
        let global_free = state.running < limits.total;
        // A known consumer (kept while idle) costs one lookup and no key
        // copy.
        let slots = match state.consumers.get_mut(consumer) {
            Some(slots) => slots,
            None => state.consumers.entry(Arc::clone(consumer)).or_default(),
        };
        if slots.running < limits.per_consumer && slots.queued == 0 && global_free {
            slots.running += 1;
            state.running += 1;
            return Ok(Ticket::Admitted(Admitted {
                admission: self,
                consumer,
                limits,
            }));
        }
        if slots.queued >= limits.queued_per_consumer {
            Self::forget_idle(state, consumer);
            return Err(QueueRefusal::Full);
        }
        slots.queued += 1;
        state.next_waiter += 1;
        let id = state.next_waiter;
        let (sender, receiver) = oneshot::channel();
        state.waiters.push_back(Waiter {
            id,
            consumer: Arc::clone(consumer),
            grant: sender,
        });
        Ok(Ticket::Queued(QueuedTicket {
            admission: self,
            consumer,
            limits,
            id,
            grant: Some(receiver),
        }))
    }

    fn release(&self, consumer: &Arc<str>, limits: AdmissionLimits) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.running = state.running.saturating_sub(1);
        if let Some(slots) = state.consumers.get_mut(consumer) {
            slots.running = slots.running.saturating_sub(1);
        }
        Self::admit_waiters(&mut state, limits);
        Self::forget_idle(&mut state, consumer);
    }

    fn abandon(&self, consumer: &Arc<str>, id: u64, granted: bool, limits: AdmissionLimits) {
        if granted {
            self.release(consumer, limits);
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = state.waiters.iter().position(|w| w.id == id) {
            state.waiters.remove(index);
            if let Some(slots) = state.consumers.get_mut(consumer) {
                slots.queued = slots.queued.saturating_sub(1);
            }
        }
        Self::forget_idle(&mut state, consumer);
    }

    /// Grants slots FIFO, skipping waiters whose consumer is at its cap.
    fn admit_waiters(state: &mut AdmissionState, limits: AdmissionLimits) {
        let mut index = 0;
        while state.running < limits.total && index < state.waiters.len() {
            let eligible = state.waiters.get(index).is_some_and(|waiter| {
                state
                    .consumers
                    .get(&waiter.consumer)
                    .is_some_and(|slots| slots.running < limits.per_consumer)
            });
            if !eligible {
                index += 1;
                continue;
            }
            let Some(waiter) = state.waiters.remove(index) else {
                break;
            };
            let Some(slots) = state.consumers.get_mut(&waiter.consumer) else {
                continue;
            };
            slots.queued = slots.queued.saturating_sub(1);
            if waiter.grant.send(()).is_ok() {
                slots.running += 1;
                state.running += 1;
            }
        }
    }

    /// Idle consumers are kept (so a busy consumer does not re-insert its
    /// entry on every call) until there are many; then every idle one goes.
    fn forget_idle(state: &mut AdmissionState, _consumer: &Arc<str>) {
        const KEEP_IDLE: usize = 64;
        if state.consumers.len() > KEEP_IDLE {
            state
                .consumers
                .retain(|_, slots| slots.running > 0 || slots.queued > 0);
        }
    }

    /// Refuses new admissions and drops every waiter (they settle CANCELLED).
    pub(crate) fn close(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.closed = true;
        state.waiters.clear();
    }
}
