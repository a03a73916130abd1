//! Consumer views: the toolsets of the many consumers one server serves
//! (each MCP session, each principal, each page's in-browser agent), the
//! wake-up their [watchers](super::watch) follow, and the end of a
//! consumer's session.
//!
//! A [`ConsumerView`] is one consumer's [`Toolset`] (which also remembers
//! the confirmations its two-phase calls were asked for) plus its latest
//! build of tools, shared by everything that serves that consumer so one
//! wake-up rebuilds once. [`ConsumerViews`] keeps them by consumer id.
//!
//! Consumers share builds too, when they would see the same tools: what a
//! consumer sees depends on it only through discovery policies (they read
//! the consumer and its own host context; `when` and notes read
//! components). A build no discovery policy decided is filed for all the
//! views of one [`ConsumerViews`] (same registry, kind and topology) under
//! the registry version and a server-wide poke count, so a surface change
//! seen by a thousand sessions builds once; a build a discovery policy
//! decided stays its consumer's alone.
//!
//! Who holds a view decides how long it lives. A session's view is held by
//! the session and forgotten when it ends
//! ([`ConsumerViews::end_session`]: its view, its settled dedupe records and
//! its open confirmations go with it); a watcher holds the view it follows;
//! a view kept for a principal is cached with a bound, and only views
//! nobody holds are evicted. An anonymous stateless caller's view is
//! [detached](ConsumerViews::detached): never cached, gone with its request.
//!
//! ```
//! use agent_surface::context::ConsumerKind;
//! use agent_surface::adapter::{ConsumerViews, Topology};
//!
//! let registry = agent_surface::Registry::default();
//! let views = ConsumerViews::new(&registry, ConsumerKind::Other, Topology::Remote);
//! let view = views.get("page-agent-1", Some("in-page agent")).unwrap();
//! assert_eq!(view.toolset().consumer().id(), "page-agent-1");
//! assert!(view.current().is_empty()); // nothing is mounted
//! views.end_session("page-agent-1"); // forgotten, with what it left behind
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::watch;

use super::projection::Catalog;
use super::{Tool, Toolset, Topology};
use crate::context::{Consumer, ConsumerKind, HostContext};
use crate::registry::Registry;

/// A build of a consumer's tools, the (registry version, poke) it was made
/// at, and whether it is fixed (`Catalog::fixed`: nothing in it can change
/// without a version bump).
type Build = ((u64, u64), Arc<Vec<Tool>>, bool);

/// A shared build and the (registry version, shared count) it is filed
/// under.
type Filed = ((u64, u64), Arc<Catalog>);

/// What the views of one [`ConsumerViews`] share: the latest build no
/// discovery policy decided, which every one of them would have made alike.
#[derive(Default)]
struct Common {
    /// Moves whenever any of the views is poked (a call settled, a refresh):
    /// live state that `when` reads may have moved for every consumer.
    epoch: AtomicU64,
    /// The latest consumer-independent build and the (registry version,
    /// epoch) it was made at.
    latest: Mutex<Option<Filed>>,
}

impl Common {
    /// The build filed under `stamp`, if any.
    fn at(&self, stamp: (u64, u64)) -> Option<Arc<Catalog>> {
        self.latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|(at, _)| *at == stamp)
            .map(|(_, catalog)| Arc::clone(catalog))
    }

    /// Files `catalog`, built from state at least as new as `stamp`,
    /// unless a build of a later stamp is filed already.
    fn file(&self, stamp: (u64, u64), catalog: &Arc<Catalog>) {
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        if latest.as_ref().is_some_and(|(at, _)| *at >= stamp) {
            return;
        }
        let previous = latest.replace((stamp, Arc::clone(catalog)));
        drop(latest);
        // Possibly the last owner of host objects: dropped unlocked.
        crate::adapter::contain::drop_contained("previous shared catalog", previous);
    }
}

/// One consumer's view: its toolset and its latest build of tools.
pub struct ConsumerView {
    toolset: Toolset,
    /// Shared with the other views of the same [`ConsumerViews`].
    common: Arc<Common>,
    /// Moves when this consumer's tools may have changed without a version
    /// bump (its own call settled, an explicit refresh).
    poke: watch::Sender<u64>,
    /// The latest build and the (version, poke) it was made at, shared by
    /// this consumer's watchers so one wake-up rebuilds once.
    latest: Mutex<Option<Build>>,
    /// Creation order, for eviction.
    created: u64,
    /// When its consumer last made a request (registry clock).
    seen_ms: AtomicU64,
    /// An anonymous stateless caller's (its watchers follow every
    /// anonymous call).
    anonymous: AtomicBool,
}

impl fmt::Debug for ConsumerView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsumerView")
            .field("consumer", self.toolset.consumer())
            .finish_non_exhaustive()
    }
}

impl ConsumerView {
    /// A view of `consumer` (`None` once the registry is disposed).
    fn new(
        registry: &Registry,
        consumer: Consumer,
        topology: Topology,
        common: Arc<Common>,
        created: u64,
    ) -> Option<ConsumerView> {
        let toolset = Toolset::builder(registry)
            .consumer(consumer)
            .topology(topology)
            .confirmations(topology.confirmations())
            .build()
            .ok()?;
        Some(ConsumerView {
            toolset,
            common,
            poke: watch::channel(0).0,
            latest: Mutex::new(None),
            created,
            seen_ms: AtomicU64::new(registry.now_ms()),
            anonymous: AtomicBool::new(false),
        })
    }

    /// The consumer's toolset: run its calls through it (it attaches the
    /// registration and surface version of what was last listed, and
    /// remembers the confirmations two-phase calls were asked for).
    pub fn toolset(&self) -> &Toolset {
        &self.toolset
    }

    /// Whether it is an anonymous stateless caller's
    /// ([`ConsumerViews::detached`] with `anonymous`).
    pub fn is_anonymous(&self) -> bool {
        self.anonymous.load(Ordering::Relaxed)
    }

    /// Records that its consumer made a request at `now_ms` (registry
    /// clock).
    pub fn seen(&self, now_ms: u64) {
        self.seen_ms.fetch_max(now_ms, Ordering::Relaxed);
    }

    /// When its consumer last made a request (registry clock).
    pub fn last_seen_ms(&self) -> u64 {
        self.seen_ms.load(Ordering::Relaxed)
    }

    /// Wakes this consumer's watchers: its tools may have changed without
    /// a surface version bump (its own call settled, live state that
    /// `when` reads moved).
    pub fn poke(&self) {
        // The shared count first: whoever sees the view's poke reads a
        // shared stamp no older than it.
        self.common.epoch.fetch_add(1, Ordering::SeqCst);
        self.restamp();
    }

    /// After a call of this consumer settled: [`poke`](Self::poke)s,
    /// unless its latest build is of the current surface version and fixed
    /// (no discovery policy decided it and nothing it considered has a
    /// `when` or a live note, see [`Snapshot::is_live`]): then no call can
    /// change its tools, or any consumer-independent build of that
    /// version, without a version bump, which wakes its watchers anyway.
    ///
    /// [`Snapshot::is_live`]: crate::snapshot::Snapshot::is_live
    pub fn settled(&self) {
        let version = self.toolset.registry().version();
        let fixed = self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|((at, _), _, fixed)| *fixed && *at == version);
        if !fixed {
            self.poke();
        }
    }

    /// Moves this view's own stamp only (its next [`current`](Self::current)
    /// does not reuse its own last build), for a wake-up whose cause
    /// already moved the shared count (another anonymous caller's call).
    pub(super) fn restamp(&self) {
        self.poke.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Follows [`poke`](Self::poke).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.poke.subscribe()
    }

    /// The tools now. Rebuilt unless the last build was made at the current
    /// registry version and poke (nothing tracked moved since), so every
    /// watcher and request of one consumer shares one build.
    pub fn current(&self) -> Arc<Vec<Tool>> {
        // Read before building: a build is never filed under a later stamp
        // than the state it saw.
        let version = self.toolset.registry().version();
        let stamp = (version, *self.poke.borrow());
        if let Some((at, tools, _)) = self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            && *at == stamp
        {
            return Arc::clone(tools);
        }
        // After the view's own stamp (a poke moves the shared count first).
        let shared = (version, self.common.epoch.load(Ordering::SeqCst));
        let (tools, fixed) = match self.common.at(shared) {
            // Another consumer's build no discovery policy decided: served
            // (and resolved against) as this consumer's own.
            Some(catalog) if self.toolset.adopt(Arc::clone(&catalog)) => {
                (Arc::clone(&catalog.tools), catalog.fixed)
            }
            _ => match self.toolset.rebuild_catalog() {
                Some(catalog) => {
                    if !catalog.consumer_dependent {
                        self.common.file(shared, &catalog);
                    }
                    (Arc::clone(&catalog.tools), catalog.fixed)
                }
                None => (self.toolset.tools(), false),
            },
        };
        let previous = self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace((stamp, Arc::clone(&tools), fixed));
        // Possibly the last owner of host objects: dropped unlocked.
        drop(previous);
        tools
    }
}

/// Consumer views cached at once; beyond it, the oldest view nobody holds
/// goes (views held by sessions and watchers are bounded by the sessions
/// and connections themselves).
const MAX_VIEWS: usize = 1024;

/// The views of one server's consumers by consumer id, and its anonymous
/// callers' detached views. At most 1,024 views are cached; beyond that the
/// oldest view nobody holds is disposed.
pub struct ConsumerViews {
    registry: Registry,
    kind: ConsumerKind,
    topology: Topology,
    common: Arc<Common>,
    created: AtomicU64,
    views: Mutex<BTreeMap<String, Arc<ConsumerView>>>,
    /// Detached views of anonymous callers, poked together: one anonymous
    /// caller's call may change what the others (a listen stream) see.
    anonymous: Mutex<Vec<Weak<ConsumerView>>>,
    /// The principal of the consumers it makes without one of their own.
    unnamed: Option<Arc<str>>,
}

/// Whom a view's consumer acts for.
enum Party<'a> {
    /// The views' principal for consumers without their own, if any.
    Unnamed,
    /// Itself: a principal the host named.
    Itself,
    /// A principal the host authenticated, with its own host context.
    Authenticated {
        host: &'a HostContext,
        principal: &'a str,
    },
}

impl fmt::Debug for ConsumerViews {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsumerViews")
            .field("kind", &self.kind)
            .field("topology", &self.topology)
            .finish_non_exhaustive()
    }
}

impl ConsumerViews {
    /// Views of `registry` for consumers of `kind`, whose toolsets follow
    /// `topology` (and the confirmation mode it implies).
    pub fn new(registry: &Registry, kind: ConsumerKind, topology: Topology) -> ConsumerViews {
        ConsumerViews {
            registry: registry.clone(),
            kind,
            topology,
            common: Arc::default(),
            created: AtomicU64::new(0),
            views: Mutex::new(BTreeMap::new()),
            anonymous: Mutex::new(Vec::new()),
            unnamed: None,
        }
    }

    /// Puts every consumer made by [`get`](Self::get) and
    /// [`detached`](Self::detached) — identities the adapter minted itself
    /// (sessions, stateless callers), no principal the host named — under
    /// one principal ([`Consumer::with_principal`]): together they draw on
    /// one party's fair share of the pending list, rate limits and
    /// admission, however many of them there are.
    #[must_use]
    pub fn group_unnamed(mut self, principal: impl Into<Arc<str>>) -> ConsumerViews {
        self.unnamed = Some(principal.into());
        self
    }

    /// The consumer `consumer_id` of this server's kind.
    pub fn consumer(&self, consumer_id: &str, label: Option<&str>) -> Consumer {
        let consumer = Consumer::new(self.kind, consumer_id);
        match label {
            Some(label) => consumer.with_label(label),
            None => consumer,
        }
    }

    fn make(
        &self,
        consumer_id: &str,
        label: Option<&str>,
        party: &Party<'_>,
    ) -> Option<ConsumerView> {
        let order = self.created.fetch_add(1, Ordering::Relaxed);
        let consumer = self.consumer(consumer_id, label);
        let consumer = match (party, &self.unnamed) {
            (Party::Unnamed, Some(principal)) => consumer.with_principal(Arc::clone(principal)),
            (Party::Unnamed | Party::Itself, _) => consumer,
            (Party::Authenticated { host, principal }, _) => consumer
                .with_host_context((*host).clone())
                .with_principal(*principal),
        };
        ConsumerView::new(
            &self.registry,
            consumer,
            self.topology,
            Arc::clone(&self.common),
            order,
        )
    }

    /// The view of `consumer_id`, created on first use with `label` (`None`
    /// once the registry is disposed). Its consumer evaluates with the
    /// registry's host-context provider.
    pub fn get(&self, consumer_id: &str, label: Option<&str>) -> Option<Arc<ConsumerView>> {
        self.get_with(consumer_id, label, &Party::Unnamed)
    }

    /// The view of a principal the host named (an `identify` hook's
    /// answer): created on first use with `label`; its consumer is its own
    /// principal, never grouped with the unnamed ones.
    pub fn get_principal(
        &self,
        consumer_id: &str,
        label: Option<&str>,
    ) -> Option<Arc<ConsumerView>> {
        self.get_with(consumer_id, label, &Party::Itself)
    }

    /// The view of an authenticated consumer: created on first use with
    /// `label`, its own `host` context ([`Consumer::with_host_context`]),
    /// which every call of its toolset carries from the transport to
    /// settlement, and the `principal` it acts for
    /// ([`Consumer::with_principal`]: the subject the credential names, so
    /// several credentials of one subject share one fair share). The id
    /// must determine the context (derive it from the credential and a
    /// fingerprint of the context, as the MCP server does): a cached view
    /// keeps the context it was created with.
    pub fn get_authenticated(
        &self,
        consumer_id: &str,
        label: Option<&str>,
        host: &HostContext,
        principal: &str,
    ) -> Option<Arc<ConsumerView>> {
        self.get_with(
            consumer_id,
            label,
            &Party::Authenticated { host, principal },
        )
    }

    fn get_with(
        &self,
        consumer_id: &str,
        label: Option<&str>,
        party: &Party<'_>,
    ) -> Option<Arc<ConsumerView>> {
        if let Some(view) = self
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(consumer_id)
        {
            return Some(Arc::clone(view));
        }
        // Built unlocked: it reads the clock (host code).
        let fresh = Arc::new(self.make(consumer_id, label, party)?);
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
    /// or one adopted for a single call): it lives while someone holds it.
    /// `anonymous` views are poked by every anonymous call while they live.
    pub fn detached(
        &self,
        consumer_id: &str,
        anonymous: bool,
        label: Option<&str>,
    ) -> Option<Arc<ConsumerView>> {
        let view = Arc::new(self.make(consumer_id, label, &Party::Unnamed)?);
        view.anonymous.store(anonymous, Ordering::Relaxed);
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
    pub fn anonymous(&self) -> Vec<Arc<ConsumerView>> {
        self.anonymous
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Every view alive: the cached ones and the anonymous callers' (for
    /// an explicit refresh).
    pub fn all(&self) -> Vec<Arc<ConsumerView>> {
        let mut all: Vec<Arc<ConsumerView>> = self
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        all.extend(self.anonymous());
        all
    }

    /// A consumer's session ended for good: its cached view is disposed,
    /// and the registry forgets its settled dedupe records and its open
    /// confirmations ([`Registry::forget_consumer`]), so nothing presenting
    /// the same identity later can replay, conflict with or approve them.
    pub fn end_session(&self, consumer_id: &str) {
        let removed = self
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(consumer_id);
        // Disposed and dropped unlocked.
        if let Some(view) = removed {
            view.toolset.dispose();
        }
        self.registry
            .forget_consumer(&Consumer::new(self.kind, consumer_id));
    }
}
