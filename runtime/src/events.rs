//! Surface events and their ordered dispatcher.
//!
//! Guarantees:
//! - **total mutation order**: every mutation's events are queued while the
//!   registry state is locked, so the queue order is the mutation order;
//! - **dispatch after the mutation completes**: listeners run after the
//!   registry lock is released;
//! - **listener isolation**: a panicking listener is contained and reported;
//!   the other listeners still run;
//! - **no re-entrant dispatch**: a registry call made from a listener takes
//!   effect at once (`mount` must return its `Result`, so the call itself
//!   cannot wait), and its events are queued behind the current ones: every
//!   listener receives the current event before any nested one, and no
//!   listener is ever entered twice;
//! - per invocation, `invocation-started` strictly before
//!   `invocation-settled`; per confirmation, `confirmation-requested`
//!   strictly before `confirmation-resolved`.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::error::ErrorCode;

/// Something that happened to the surface.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum SurfaceEvent {
    /// The surface version moved.
    SurfaceChanged {
        /// The new version.
        surface_version: String,
    },
    /// A component was mounted.
    ComponentRegistered {
        /// Its registration.
        registration_id: Arc<str>,
        /// Its type.
        component_type: Arc<str>,
        /// Its instance.
        instance_id: Arc<str>,
    },
    /// A component was unmounted.
    ComponentUnregistered {
        /// Its registration.
        registration_id: Arc<str>,
        /// Its type.
        component_type: Arc<str>,
        /// Its instance.
        instance_id: Arc<str>,
    },
    /// A mount was refused (duplicate instance, or the registration guard).
    ComponentRejected {
        /// The refused type.
        component_type: Arc<str>,
        /// The refused instance.
        instance_id: Arc<str>,
        /// `duplicate` or `guard`.
        reason: &'static str,
    },
    /// A pushed availability change.
    AvailabilityChanged {
        /// The registration.
        registration_id: Arc<str>,
        /// The capability.
        capability_id: Arc<str>,
        /// Whether it is now available.
        available: bool,
    },
    /// A view capability shares its suffix with a known domain procedure.
    CollisionSuspected {
        /// The view capability.
        view_capability_id: Arc<str>,
        /// The domain procedure.
        domain_procedure_id: Arc<str>,
    },
    /// An invocation started executing the pipeline.
    InvocationStarted {
        /// The invocation.
        invocation_id: Arc<str>,
        /// The capability.
        capability_id: Arc<str>,
        /// The consumer (`kind:id`).
        consumer_id: Arc<str>,
    },
    /// An invocation settled.
    InvocationSettled {
        /// The invocation.
        invocation_id: Arc<str>,
        /// The capability.
        capability_id: Arc<str>,
        /// The consumer (`kind:id`).
        consumer_id: Arc<str>,
        /// The consumer as a person would name it, if known.
        consumer_label: Option<Arc<str>>,
        /// `ok` or `error`.
        status: &'static str,
        /// The error code, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<ErrorCode>,
        /// Milliseconds from start to settlement.
        duration_ms: u64,
    },
    /// A confirmation is waiting for the user.
    ConfirmationRequested {
        /// The confirmation.
        confirmation_id: Arc<str>,
        /// The capability.
        capability_id: Arc<str>,
        /// When it expires (RFC 3339).
        expires_at: String,
        /// Who asks (`kind:id`).
        consumer_id: Arc<str>,
        /// Who asks, as a person would name them, if known.
        requester: Option<Arc<str>>,
        /// The request in the person's terms (its presentation's title).
        title: String,
    },
    /// A confirmation was resolved.
    ConfirmationResolved {
        /// The confirmation.
        confirmation_id: Arc<str>,
        /// `approved`, `denied`, `expired` or `withdrawn`.
        outcome: &'static str,
        /// The approval channel of an answer (`None` for an expiry or a
        /// withdrawal).
        channel: Option<Arc<str>>,
        /// Who answered through it (`None` for an expiry or a withdrawal).
        approver: Option<Arc<str>>,
        /// Why it was withdrawn (`replaced`, `unmounted`, `agent-left`),
        /// for a withdrawal.
        reason: Option<&'static str>,
    },
}

/// A registered listener.
pub type Listener = Arc<dyn Fn(&SurfaceEvent) + Send + Sync>;

/// Removes a listener when called (or dropped via [`Subscription`]).
#[derive(Debug)]
#[must_use = "dropping a Subscription unsubscribes the listener"]
pub struct Subscription {
    id: u64,
    dispatcher: std::sync::Weak<Dispatcher>,
}

impl Subscription {
    /// Stops delivering events to the listener.
    pub fn unsubscribe(self) {}
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(dispatcher) = self.dispatcher.upgrade() {
            dispatcher.remove(self.id);
        }
    }
}

#[derive(Default)]
struct Queue {
    events: VecDeque<SurfaceEvent>,
    dispatching: bool,
}

/// The ordered, non-reentrant event dispatcher.
#[derive(Default)]
pub(crate) struct Dispatcher {
    listeners: Mutex<Arc<Vec<(u64, Listener)>>>,
    has_listeners: AtomicBool,
    next_id: AtomicU64,
    queue: Mutex<Queue>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("has_listeners", &self.has_listeners.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    pub(crate) fn subscribe(self: &Arc<Self>, listener: Listener) -> Subscription {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut next = Vec::clone(&listeners);
        next.push((id, listener));
        *listeners = Arc::new(next);
        self.has_listeners.store(true, Ordering::Release);
        Subscription {
            id,
            dispatcher: Arc::downgrade(self),
        }
    }

    fn remove(&self, id: u64) {
        let mut listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let next: Vec<(u64, Listener)> = listeners
            .iter()
            .filter(|(i, _)| *i != id)
            .cloned()
            .collect();
        self.has_listeners
            .store(!next.is_empty(), Ordering::Release);
        if next.is_empty() {
            // Nobody will ever receive what is queued.
            self.queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .events
                .clear();
        }
        let previous = std::mem::replace(&mut *listeners, Arc::new(next));
        drop(listeners);
        // A listener closure may own a mount handle: drop it unlocked.
        crate::util::contain::drop_contained("event listener destructor", previous);
    }

    pub(crate) fn clear(&self) {
        let mut listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let previous = std::mem::replace(&mut *listeners, Arc::new(Vec::new()));
        self.has_listeners.store(false, Ordering::Release);
        drop(listeners);
        let queued = std::mem::take(
            &mut self
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .events,
        );
        // A listener closure may own a mount handle: drop it unlocked.
        crate::util::contain::drop_contained("event listener destructor", (previous, queued));
    }

    /// Whether anyone listens (events need not even be built otherwise).
    pub(crate) fn active(&self) -> bool {
        self.has_listeners.load(Ordering::Acquire)
    }

    /// Queues events. Call while the mutation's lock is held so the queue
    /// order is the mutation order; then call [`drain`](Self::drain) after
    /// releasing it.
    pub(crate) fn enqueue(&self, events: impl IntoIterator<Item = SurfaceEvent>) {
        if !self.active() {
            return;
        }
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.events.extend(events);
    }

    /// Delivers queued events unless another caller is already delivering
    /// (that caller will deliver these too, in order).
    pub(crate) fn drain(&self) {
        if !self.active() {
            return;
        }
        {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.dispatching || queue.events.is_empty() {
                return;
            }
            queue.dispatching = true;
        }
        loop {
            let event = {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                match queue.events.pop_front() {
                    Some(event) => event,
                    None => {
                        queue.dispatching = false;
                        return;
                    }
                }
            };
            let listeners = Arc::clone(
                &self
                    .listeners
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            );
            for (_, listener) in listeners.iter() {
                if catch_unwind(AssertUnwindSafe(|| listener(&event))).is_err() {
                    tracing::error!(event = ?event, "an agent-surface event listener panicked; other listeners still ran");
                }
            }
        }
    }

    /// Queues and delivers at once (for events outside any state lock).
    pub(crate) fn emit(&self, events: impl IntoIterator<Item = SurfaceEvent>) {
        if self.active() {
            self.enqueue(events);
            self.drain();
        }
    }

    /// Like [`emit`](Self::emit), building the events only when someone listens.
    pub(crate) fn emit_with<I: IntoIterator<Item = SurfaceEvent>>(
        &self,
        events: impl FnOnce() -> I,
    ) {
        if self.active() {
            self.enqueue(events());
            self.drain();
        }
    }
}
