//! Consumer views: each MCP consumer's toolset (which also remembers the
//! confirmations its two-phase calls were asked for) and the wake-up its
//! watchers follow.
//!
//! Who holds a view decides how long it lives. A session's view is held by
//! the session and forgotten when it ends; a watcher (a list_changed
//! notifier or listen stream) holds the view it follows; a principal's view
//! (the `identify` hook) is kept in a bounded cache from which only views
//! nobody holds are evicted. An anonymous stateless caller's view is
//! detached: never cached, gone with its request.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::watch;

use crate::context::{Consumer, ConsumerKind};
use crate::registry::Registry;
use crate::toolset::{ConfirmationMode, Tool, Toolset, Topology};

/// A build of a consumer's tools and the (registry version, poke) it was
/// made at.
type Build = ((u64, u64), Arc<Vec<Tool>>);

/// One consumer's view.
pub(super) struct View {
    pub(super) toolset: Toolset,
    /// Moves when this consumer's tools may have changed without a version
    /// bump (its own call settled, an explicit refresh).
    poke: watch::Sender<u64>,
    /// The latest build and the (version, poke) it was made at, shared by
    /// this consumer's watchers so one wake-up rebuilds once.
    latest: Mutex<Option<Build>>,
    /// Creation order, for eviction.
    created: u64,
    /// When its consumer last made a request (registry clock).
    seen_ms: std::sync::atomic::AtomicU64,
    /// An anonymous stateless caller's (its watchers follow every
    /// anonymous call).
    anonymous: std::sync::atomic::AtomicBool,
}

impl View {
    /// A view of `consumer_id` (`None` once the registry is disposed).
    fn new(
        registry: &Registry,
        consumer_id: &str,
        label: Option<&str>,
        created: u64,
    ) -> Option<View> {
        let mut consumer = Consumer::new(ConsumerKind::Mcp, consumer_id);
        if let Some(label) = label {
            consumer = consumer.with_label(label);
        }
        let toolset = Toolset::builder(registry)
            .consumer(consumer)
            .topology(Topology::Remote)
            .confirmations(ConfirmationMode::TwoPhase)
            .build()
            .ok()?;
        Some(View {
            toolset,
            poke: watch::channel(0).0,
            latest: Mutex::new(None),
            created,
            seen_ms: std::sync::atomic::AtomicU64::new(registry.now_ms()),
            anonymous: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Whether it is an anonymous stateless caller's.
    pub(super) fn is_anonymous(&self) -> bool {
        self.anonymous.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Its consumer made a request now.
    pub(super) fn seen(&self, now_ms: u64) {
        self.seen_ms
            .fetch_max(now_ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// When its consumer last made a request.
    pub(super) fn last_seen_ms(&self) -> u64 {
        self.seen_ms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Wakes this consumer's watchers.
    pub(super) fn poke(&self) {
        self.poke.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Follows [`poke`](Self::poke).
    pub(super) fn subscribe(&self) -> watch::Receiver<u64> {
        self.poke.subscribe()
    }

    /// The tools now. Rebuilt unless the last build was made at the current
    /// registry version and poke (nothing tracked moved since).
    pub(super) fn current(&self, registry: &Registry) -> Arc<Vec<Tool>> {
        // Read before building: a build is never filed under a later stamp
        // than the state it saw.
        let stamp = (registry.version(), *self.poke.borrow());
        if let Some((at, tools)) = self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            && *at == stamp
        {
            return Arc::clone(tools);
        }
        let tools = self.toolset.tools();
        let previous = self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace((stamp, Arc::clone(&tools)));
        // Possibly the last owner of host objects: dropped unlocked.
        drop(previous);
        tools
    }
}

/// Consumer views cached at once; beyond it, the oldest view nobody holds
/// goes (views held by sessions and watchers are bounded by the sessions
/// and connections themselves).
const MAX_VIEWS: usize = 1024;

/// The views by consumer id, and the anonymous callers' detached views.
#[derive(Default)]
pub(super) struct Views {
    views: Mutex<BTreeMap<String, Arc<View>>>,
    /// Detached views of anonymous callers, poked together: one anonymous
    /// caller's call may change what the others (a listen stream) see.
    anonymous: Mutex<Vec<Weak<View>>>,
}

impl Views {
    /// The view of `consumer_id`, created on first use (`None` once the
    /// registry is disposed). `order` numbers creations.
    pub(super) fn get(
        &self,
        registry: &Registry,
        consumer_id: &str,
        label: Option<&str>,
        order: impl FnOnce() -> u64,
    ) -> Option<Arc<View>> {
        if let Some(view) = self
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(consumer_id)
        {
            return Some(Arc::clone(view));
        }
        // Built unlocked: it reads the clock (host code).
        let fresh = Arc::new(View::new(registry, consumer_id, label, order())?);
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(view) = views.get(consumer_id) {
            // Another request of the same consumer came first.
            let view = Arc::clone(view);
            drop(views);
            fresh.toolset.dispose();
            return Some(view);
        }
        let mut evicted = None;
        if views.len() >= MAX_VIEWS {
            let oldest = views
                .iter()
                .filter(|(_, view)| Arc::strong_count(view) == 1)
                .min_by_key(|(_, view)| view.created)
                .map(|(id, _)| id.clone());
            evicted = oldest.and_then(|id| views.remove(&id));
        }
        views.insert(consumer_id.to_owned(), Arc::clone(&fresh));
        drop(views);
        // Disposed and dropped unlocked: its catalog may own host objects.
        if let Some(evicted) = evicted {
            evicted.toolset.dispose();
        }
        Some(fresh)
    }

    /// A view of `consumer_id` that is not cached (an anonymous caller's,
    /// or one adopted for a single call). `anonymous` views are poked by
    /// every anonymous call while they live.
    pub(super) fn detached(
        &self,
        registry: &Registry,
        consumer_id: &str,
        anonymous: bool,
        label: Option<&str>,
    ) -> Option<Arc<View>> {
        let view = Arc::new(View::new(registry, consumer_id, label, 0)?);
        view.anonymous
            .store(anonymous, std::sync::atomic::Ordering::Relaxed);
        if anonymous {
            let mut all = self
                .anonymous
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            all.retain(|view| view.strong_count() > 0);
            all.push(Arc::downgrade(&view));
        }
        Some(view)
    }

    /// The anonymous callers' views alive now.
    pub(super) fn anonymous(&self) -> Vec<Arc<View>> {
        self.anonymous
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Every view (for an explicit refresh).
    pub(super) fn all(&self) -> Vec<Arc<View>> {
        let mut all: Vec<Arc<View>> = self
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        all.extend(self.anonymous());
        all
    }

    /// Drops the view of an ended session.
    pub(super) fn forget(&self, consumer_id: &str) {
        let removed = self
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(consumer_id);
        // Disposed and dropped unlocked.
        if let Some(view) = removed {
            view.toolset.dispose();
        }
    }
}
