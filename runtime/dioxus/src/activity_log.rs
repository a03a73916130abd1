//! `ActivityLog`: the person's record of what agents did, kept by the
//! server, not by a tab — a reload or a new tab shows what happened before
//! it opened, a request a reload withdrew included.
//!
//! Make one per person (per registry) where the application starts and
//! keep it as long as it serves; each page reads it with
//! [`use_activity_log`]. It keeps at most `capacity` entries
//! ([`MAX_ACTIVITY`] at most) and [`MAX_LOG_BYTES`] of text, dropping the
//! oldest first, and says how many events it missed.

use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};

use agent_surface::Registry;
use agent_surface::events::{Subscription, SurfaceEvent};
use dioxus_core::{spawn, use_hook};
use dioxus_signals::{Signal, WritableExt};
use tokio::sync::watch;

use crate::activity::{ActivityEntry, AgentActivity, MAX_ACTIVITY, Memory};

/// Most bytes of text a log keeps (entries' names and titles); past it the
/// oldest entries go.
pub const MAX_LOG_BYTES: usize = 256 * 1024;

#[derive(Default)]
struct Kept {
    entries: VecDeque<ActivityEntry>,
    bytes: usize,
    memory: Memory,
    dropped: u64,
}

struct Inner {
    kept: Mutex<Kept>,
    /// Moves whenever the log does.
    changed: watch::Sender<u64>,
    capacity: usize,
}

/// The person's activity record (a handle: clones share it).
#[derive(Clone)]
pub struct ActivityLog {
    inner: Arc<Inner>,
    _subscription: Arc<Subscription>,
}

impl std::fmt::Debug for ActivityLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActivityLog")
            .field("entries", &self.entries().len())
            .finish()
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take(&self, event: &SurfaceEvent, at_ms: u64) {
        let mut kept = self.lock();
        if let SurfaceEvent::EventsDropped { count } = event {
            kept.dropped = kept.dropped.saturating_add(*count);
        } else if let Some(entry) = kept.memory.entry(event, at_ms, self.capacity) {
            kept.bytes = kept.bytes.saturating_add(entry.text_bytes());
            kept.entries.push_front(entry);
            while kept.entries.len() > self.capacity || kept.bytes > MAX_LOG_BYTES {
                let Some(old) = kept.entries.pop_back() else {
                    break;
                };
                kept.bytes = kept.bytes.saturating_sub(old.text_bytes());
            }
        } else {
            return;
        }
        drop(kept);
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl ActivityLog {
    /// A log of `registry`'s agent activity from now on, at most
    /// `capacity` entries (at most [`MAX_ACTIVITY`]). It keeps the registry
    /// alive while it lives (it listens to it and reads its clock).
    pub fn start(registry: &Registry, capacity: usize) -> ActivityLog {
        ActivityLog::start_with_history(registry, capacity, Vec::new())
    }

    /// [`start`](Self::start), the log beginning with `history` (newest
    /// first): what happened before this process started, read back from
    /// a durable audit log with
    /// [`activity_from_audit`](crate::activity_from_audit).
    pub fn start_with_history(
        registry: &Registry,
        capacity: usize,
        history: Vec<ActivityEntry>,
    ) -> ActivityLog {
        let capacity = capacity.clamp(1, MAX_ACTIVITY);
        let mut kept = Kept::default();
        for entry in history.into_iter().take(capacity) {
            if kept.bytes.saturating_add(entry.text_bytes()) > MAX_LOG_BYTES {
                break;
            }
            kept.bytes = kept.bytes.saturating_add(entry.text_bytes());
            kept.entries.push_back(entry);
        }
        let inner = Arc::new(Inner {
            kept: Mutex::new(kept),
            changed: watch::channel(0).0,
            capacity,
        });
        let weak = Arc::downgrade(&inner);
        let clock = registry.clone();
        let subscription = registry.subscribe(move |event| {
            if let Some(inner) = weak.upgrade() {
                inner.take(event, clock.now_ms());
            }
        });
        ActivityLog {
            inner,
            _subscription: Arc::new(subscription),
        }
    }

    /// The entries, newest first.
    pub fn entries(&self) -> Vec<ActivityEntry> {
        self.inner.lock().entries.iter().cloned().collect()
    }

    /// Events missed because they came faster than listeners could take.
    pub fn dropped(&self) -> u64 {
        self.inner.lock().dropped
    }
}

/// The person's activity from `log`, kept current: a component that reads
/// [`entries`](AgentActivity::entries) re-renders as agents act, and a
/// page opened later starts with everything the log kept.
pub fn use_activity_log(log: &ActivityLog) -> AgentActivity {
    let log = log.clone();
    use_hook(move || {
        let mut entries = Signal::new(log.entries().into_iter().collect::<VecDeque<_>>());
        let mut dropped = Signal::new(log.dropped());
        let mut changed = log.inner.changed.subscribe();
        let keep = Rc::new(log);
        spawn(async move {
            let log = keep;
            while changed.changed().await.is_ok() {
                entries.set(log.entries().into_iter().collect());
                dropped.set(log.dropped());
            }
        });
        AgentActivity::from_signals(entries, dropped)
    })
}
