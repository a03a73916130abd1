//! The ordered, bounded, non-reentrant event dispatcher (its guarantees are
//! listed on the [`events`](super) module).
//!
//! One deliverer at a time holds the queue (`dispatching`). A caller that
//! finds nobody delivering becomes the deliverer for what is queued at that
//! moment plus what its own listeners cause; if more arrived meanwhile, it
//! hands the queue to the delivery thread (started on first need, gone
//! after a quiet spell) and returns. Outside a hand-off every event is
//! delivered before the call that caused it returns, as before.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::Duration;

use super::{Listener, Subscription, SurfaceEvent};

/// Most events waiting for delivery; beyond it new events are dropped and
/// counted ([`SurfaceEvent::EventsDropped`]).
pub const MAX_QUEUED_EVENTS: usize = 4_096;

/// Most bytes of events waiting for delivery (each event's strings plus a
/// fixed part); beyond it new events are dropped and counted.
pub const MAX_QUEUED_BYTES: usize = 4 << 20;

/// The delivery thread's name.
const COURIER: &str = "agent-surface-events";

/// How long an idle delivery thread waits for work before it ends.
const COURIER_IDLE: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Queue {
    events: VecDeque<SurfaceEvent>,
    bytes: usize,
    /// Dropped since the last delivered marker.
    dropped: u64,
    /// Someone (a caller or the delivery thread) is delivering.
    dispatching: bool,
    /// Events queued by listeners of the deliverer on its own thread: its
    /// to deliver (nested calls), not handed off.
    nested: usize,
    /// The delivery thread exists.
    courier: bool,
    /// The queue was handed to the delivery thread.
    handed: bool,
    /// The runtime the hand-off came from: entered by the delivery thread
    /// so listeners may use it.
    runtime: Option<tokio::runtime::Handle>,
}

/// The ordered, non-reentrant event dispatcher.
#[derive(Default)]
pub(crate) struct Dispatcher {
    listeners: Mutex<Arc<Vec<(u64, Listener)>>>,
    has_listeners: AtomicBool,
    next_id: AtomicU64,
    queue: Mutex<Queue>,
    /// Wakes the delivery thread (which holds no reference while idle).
    doorbell: Arc<Doorbell>,
}

/// Wakes the idle delivery thread; closed when the dispatcher goes.
#[derive(Default)]
struct Doorbell {
    /// (rung, closed, the thread has ended)
    state: Mutex<(bool, bool, bool)>,
    ring: Condvar,
}

impl Doorbell {
    fn ring(&self) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).0 = true;
        self.ring.notify_one();
    }

    fn close(&self) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).1 = true;
        self.ring.notify_one();
    }

    /// Marks the delivery thread ended.
    fn ended(&self) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).2 = true;
        self.ring.notify_all();
    }

    /// Waits for a ring: `false` on a quiet spell or once closed.
    fn wait(&self, idle: Duration) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while !state.0 && !state.1 {
            let (next, timeout) = self
                .ring
                .wait_timeout(state, idle)
                .unwrap_or_else(PoisonError::into_inner);
            state = next;
            if timeout.timed_out() {
                break;
            }
        }
        let rung = state.0 && !state.1;
        state.0 = false;
        rung
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.doorbell.close();
    }
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("has_listeners", &self.has_listeners.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The dispatcher this thread is delivering for (its address), if any.
    static DELIVERING: Cell<usize> = const { Cell::new(0) };
    /// Events this thread queued and has not drained yet, per dispatcher
    /// (address, count). A drain delivers on its own thread only when the
    /// queue holds nothing but these.
    static OWN: std::cell::RefCell<Vec<(usize, usize)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Dispatchers one thread keeps own counts for at once (a host hook that
/// mounts into other registries mid-mutation); beyond it the oldest count
/// is let go of (its drain hands off: correct, just not on this thread).
const MAX_OWN: usize = 16;

/// Counts `count` more events queued by this thread for `address`.
fn own_queued(address: usize, count: usize) {
    OWN.with(|own| {
        let mut own = own.borrow_mut();
        match own.iter_mut().find(|(at, _)| *at == address) {
            Some((_, queued)) => *queued += count,
            None => {
                if own.len() >= MAX_OWN {
                    own.remove(0);
                }
                own.push((address, count));
            }
        }
    });
}

/// Takes this thread's count of queued events for `address`.
fn own_taken(address: usize) -> usize {
    OWN.with(|own| {
        let mut own = own.borrow_mut();
        match own.iter().position(|(at, _)| *at == address) {
            Some(index) => own.remove(index).1,
            None => 0,
        }
    })
}

/// Ends a delivery however it ends: a panic escaping it (nothing should)
/// still gives the queue back, so delivery never halts for good.
struct Dispatching<'a>(&'a Dispatcher);

impl Drop for Dispatching<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut queue = self.0.lock();
            queue.dispatching = false;
            if std::thread::current().name() == Some(COURIER) {
                // This delivery thread is going: a later hand-off starts one.
                queue.courier = false;
            }
        }
    }
}

/// Marks this thread as delivering for `dispatcher` until dropped.
struct Delivering(usize);

impl Delivering {
    fn enter(dispatcher: &Dispatcher) -> Delivering {
        let address = std::ptr::from_ref(dispatcher) as usize;
        Delivering(DELIVERING.with(|cell| cell.replace(address)))
    }
}

impl Drop for Delivering {
    fn drop(&mut self) {
        DELIVERING.with(|cell| cell.set(self.0));
    }
}

impl Dispatcher {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

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

    pub(crate) fn remove(&self, id: u64) {
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
        let queued = if next.is_empty() {
            // Nobody will ever receive what is queued.
            self.take_queued()
        } else {
            VecDeque::new()
        };
        let previous = std::mem::replace(&mut *listeners, Arc::new(next));
        drop(listeners);
        // A listener closure may own a mount handle: drop it unlocked.
        crate::util::contain::drop_contained("event listener destructor", (previous, queued));
    }

    pub(crate) fn clear(&self) {
        let mut listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let previous = std::mem::replace(&mut *listeners, Arc::new(Vec::new()));
        self.has_listeners.store(false, Ordering::Release);
        drop(listeners);
        let queued = self.take_queued();
        // A listener closure may own a mount handle: drop it unlocked.
        crate::util::contain::drop_contained("event listener destructor", (previous, queued));
    }

    fn take_queued(&self) -> VecDeque<SurfaceEvent> {
        let mut queue = self.lock();
        queue.bytes = 0;
        queue.dropped = 0;
        queue.nested = 0;
        std::mem::take(&mut queue.events)
    }

    /// Whether anyone listens (events need not even be built otherwise).
    pub(crate) fn active(&self) -> bool {
        self.has_listeners.load(Ordering::Acquire)
    }

    /// Events waiting for delivery now.
    pub(crate) fn backlog(&self) -> usize {
        self.lock().events.len()
    }

    /// Queues events. Call while the mutation's lock is held so the queue
    /// order is the mutation order; then call [`drain`](Self::drain) after
    /// releasing it. Beyond the bounds an event is dropped and counted.
    pub(crate) fn enqueue(&self, events: impl IntoIterator<Item = SurfaceEvent>) {
        if !self.active() {
            return;
        }
        let address = std::ptr::from_ref(self) as usize;
        let nested = DELIVERING.with(Cell::get) == address;
        let mut queue = self.lock();
        let before = queue.events.len();
        let marker = SurfaceEvent::EventsDropped { count: 0 }.weight();
        for event in events {
            let weight = event.weight();
            // A gap needs room for its marker too: both count against the
            // bounds.
            let (slots, bytes) = match queue.dropped {
                0 => (1, weight),
                _ => (2, weight + marker),
            };
            if queue.events.len() + slots > MAX_QUEUED_EVENTS
                || queue.bytes.saturating_add(bytes) > MAX_QUEUED_BYTES
            {
                queue.dropped = queue.dropped.saturating_add(1);
                continue;
            }
            if queue.dropped > 0 {
                // The gap is marked where it happened.
                let count = std::mem::take(&mut queue.dropped);
                queue
                    .events
                    .push_back(SurfaceEvent::EventsDropped { count });
                queue.bytes += marker;
                if nested {
                    queue.nested += 1;
                }
            }
            queue.bytes += weight;
            queue.events.push_back(event);
            if nested {
                queue.nested += 1;
            }
        }
        if !nested {
            own_queued(address, queue.events.len().saturating_sub(before));
        }
    }

    /// The next event to deliver, or `None` (and delivery ends) when the
    /// queue is empty; a gap at the end is marked too.
    fn next_event(&self, queue: &mut Queue) -> Option<SurfaceEvent> {
        match queue.events.pop_front() {
            Some(event) => {
                queue.bytes = queue.bytes.saturating_sub(event.weight());
                Some(event)
            }
            None if queue.dropped > 0 => Some(SurfaceEvent::EventsDropped {
                count: std::mem::take(&mut queue.dropped),
            }),
            None => {
                queue.dispatching = false;
                queue.nested = 0;
                None
            }
        }
    }

    fn deliver(&self, event: &SurfaceEvent) {
        let listeners = Arc::clone(
            &self
                .listeners
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for (_, listener) in listeners.iter() {
            if crate::util::contain::catch(|| listener(event)).is_err() {
                tracing::error!(event = ?event, "an agent-surface event listener panicked; other listeners still ran");
            }
        }
        // A listener unsubscribed meanwhile may be owned by this copy alone:
        // its destructor is host code.
        crate::util::contain::drop_contained("event listener destructor", listeners);
    }

    /// Delivers what is queued now (and what this call's listeners cause)
    /// unless someone is already delivering (they deliver these too, in
    /// order); anything that arrives meanwhile goes to the delivery thread.
    pub(crate) fn drain(self: &Arc<Self>) {
        if !self.active() {
            return;
        }
        let own = own_taken(std::ptr::from_ref(&**self) as usize);
        let mut no_thread = None;
        let mut quota = {
            let mut queue = self.lock();
            if queue.dispatching || (queue.events.is_empty() && queue.dropped == 0) {
                return;
            }
            queue.dispatching = true;
            queue.nested = 0;
            if queue.events.len() > own {
                // Other calls' events are queued too: the delivery
                // thread's, this call's own with them, in order.
                match self.hand_off(&mut queue) {
                    Ok(()) => return,
                    Err(error) => {
                        no_thread = Some(error);
                        usize::MAX
                    }
                }
            } else {
                queue.events.len().max(1)
            }
        };
        let _delivering = Delivering::enter(self);
        let _dispatching = Dispatching(self);
        loop {
            if let Some(error) = no_thread.take() {
                // Logged unlocked (a tracing layer is host code).
                tracing::warn!(%error, "no event delivery thread; the caller delivers");
            }
            let event = {
                let mut queue = self.lock();
                if quota == 0 {
                    // What this call's listeners caused is its own, unless
                    // other calls' events came in meanwhile.
                    let nested = std::mem::take(&mut queue.nested);
                    if queue.events.len() <= nested {
                        quota = nested;
                    }
                }
                if quota == 0 {
                    if queue.events.is_empty() && queue.dropped == 0 {
                        queue.dispatching = false;
                        return;
                    }
                    // Other calls' events: the delivery thread's.
                    match self.hand_off(&mut queue) {
                        Ok(()) => return,
                        // No thread could be started: deliver them here.
                        Err(error) => {
                            no_thread = Some(error);
                            quota = usize::MAX;
                        }
                    }
                }
                match self.next_event(&mut queue) {
                    Some(event) => event,
                    None => return,
                }
            };
            quota = quota.saturating_sub(1);
            self.deliver(&event);
        }
    }

    /// Hands the queue (still `dispatching`) to the delivery thread,
    /// starting it if needed; the error when no thread can be started.
    fn hand_off(self: &Arc<Self>, queue: &mut Queue) -> std::io::Result<()> {
        queue.handed = true;
        queue.runtime = tokio::runtime::Handle::try_current().ok();
        if queue.courier {
            self.doorbell.ring();
            return Ok(());
        }
        let weak = Arc::downgrade(self);
        let doorbell = Arc::clone(&self.doorbell);
        doorbell.ring();
        let started = std::thread::Builder::new()
            .name(COURIER.to_owned())
            .spawn(move || courier(&weak, &doorbell));
        match started {
            Ok(_) => {
                queue.courier = true;
                Ok(())
            }
            Err(error) => {
                queue.handed = false;
                Err(error)
            }
        }
    }

    /// Queues and delivers at once (for events outside any state lock).
    pub(crate) fn emit(self: &Arc<Self>, events: impl IntoIterator<Item = SurfaceEvent>) {
        if self.active() {
            self.enqueue(events);
            self.drain();
        }
    }

    /// Like [`emit`](Self::emit), building the events only when someone listens.
    pub(crate) fn emit_with<I: IntoIterator<Item = SurfaceEvent>>(
        self: &Arc<Self>,
        events: impl FnOnce() -> I,
    ) {
        if self.active() {
            self.enqueue(events());
            self.drain();
        }
    }
}

/// The delivery thread: delivers whatever is handed to it, in order, and
/// ends after a quiet spell or when its dispatcher is gone. It holds the
/// dispatcher only while delivering.
fn courier(dispatcher: &Weak<Dispatcher>, doorbell: &Doorbell) {
    /// Marks the thread ended however it ends.
    struct Ending<'a>(&'a Doorbell);
    impl Drop for Ending<'_> {
        fn drop(&mut self) {
            self.0.ended();
        }
    }
    let _ending = Ending(doorbell);
    loop {
        let rung = doorbell.wait(COURIER_IDLE);
        let Some(strong) = dispatcher.upgrade() else {
            return;
        };
        let runtime = {
            let mut queue = strong.lock();
            if !queue.handed {
                if rung {
                    continue;
                }
                // Quiet: end (a later hand-off starts a new thread).
                queue.courier = false;
                return;
            }
            queue.handed = false;
            queue.runtime.take()
        };
        let entered = runtime.as_ref().map(tokio::runtime::Handle::enter);
        let delivering = Delivering::enter(&strong);
        let dispatching = Dispatching(&strong);
        loop {
            let event = {
                let mut queue = strong.lock();
                match strong.next_event(&mut queue) {
                    Some(event) => event,
                    None => break,
                }
            };
            strong.deliver(&event);
        }
        drop(dispatching);
        drop(delivering);
        drop(entered);
        drop(strong);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code

    use std::sync::mpsc;

    use super::*;

    fn event(n: u64) -> SurfaceEvent {
        SurfaceEvent::SurfaceChanged {
            surface_version: n.to_string(),
        }
    }

    #[test]
    fn the_delivery_thread_delivers_others_events_and_ends_with_its_dispatcher() {
        let dispatcher = Arc::new(Dispatcher::default());
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let subscription = dispatcher.subscribe(Arc::new(move |_: &SurfaceEvent| {
            let name = std::thread::current().name().map(str::to_owned);
            let _ = tx.lock().unwrap().send(name);
        }));
        // Queued by another thread, drained here: not this call's own, so
        // the delivery thread delivers it.
        std::thread::scope(|scope| {
            scope.spawn(|| dispatcher.enqueue([event(1)]));
        });
        dispatcher.drain();
        let name = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert_eq!(name.as_deref(), Some("agent-surface-events"));
        // Once the delivery thread is done, this thread's own events are
        // delivered here, at once.
        while dispatcher.lock().dispatching {
            std::thread::yield_now();
        }
        dispatcher.emit([event(2)]);
        let name = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert_eq!(name, std::thread::current().name().map(str::to_owned));
        let doorbell = Arc::clone(&dispatcher.doorbell);
        drop(subscription);
        drop(dispatcher);
        // Dropping the dispatcher closes the doorbell, which wakes the idle
        // thread to end (the timeout only guards the test).
        let state = doorbell.state.lock().unwrap();
        let (state, timeout) = doorbell
            .ring
            .wait_timeout_while(state, Duration::from_secs(60), |state| !state.2)
            .unwrap();
        assert!(
            state.2 && !timeout.timed_out(),
            "the delivery thread outlived its dispatcher"
        );
    }
}
