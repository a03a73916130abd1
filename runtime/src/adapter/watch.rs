//! Change watching: when a consumer must be told its tools changed (MCP's
//! `notifications/tools/list_changed`, a browser's tool registrations).
//!
//! A consumer's tools change in two ways: a surface mutation (the registry
//! version moves) or live state that `when`/`describe` read (no version
//! bump: re-evaluated when the tools are built). A [`ChangeWatcher`]
//! follows one consumer's [`ConsumerView`]: it wakes when the version moves
//! or the view is poked (the consumer's own call settled, or an explicit
//! refresh), rebuilds that one view and compares what a client would be
//! served with what it last delivered. Calls never touch other consumers'
//! views.
//!
//! A watcher often starts after the moment it must cover (a protocol
//! acknowledges a subscription before its handler runs). So the moment is a
//! [`Mark`] taken *before* the acknowledgment: the registry version and the
//! server's [`CallActivity`]. Attaching, a watcher first subscribes to its
//! wake-ups, then builds the tools it compares against, then reads the
//! activity again: if anything could have changed the tools in between,
//! the first notification is due at once. Nothing is ever marked delivered
//! that was not compared and sent.
//!
//! ```
//! use agent_surface::context::ConsumerKind;
//! use agent_surface::adapter::{CallActivity, ChangeWatcher, ConsumerViews, Mark, Topology};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let registry = agent_surface::Registry::default();
//! let views = ConsumerViews::new(&registry, ConsumerKind::Other, Topology::Remote);
//! let activity = CallActivity::default();
//! let since = Mark::now(&registry, &activity); // before acknowledging
//! let view = views.get("page-agent-1", None).unwrap();
//! let (mut watcher, due) = ChangeWatcher::attach(&registry, &activity, view, since);
//! assert!(!due); // nothing moved since the mark
//! tokio::spawn(async move {
//!     while watcher.changed().await.is_some() {
//!         // tell the client: its tools changed
//!     }
//! });
//! # });
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

use super::Tool;
use super::consumer_views::ConsumerView;
use crate::registry::Registry;

/// How long an anonymous caller's watcher lets further wake-ups by other
/// anonymous calls gather after it re-checked (its first wake-up after a
/// quiet spell re-checks at once; version changes are never held back).
/// Bounds the re-checks of many idle listen streams under a stream of calls
/// to one per stream per spell, whatever the call rate.
const ANONYMOUS_SPELL: std::time::Duration = std::time::Duration::from_millis(200);

/// Server-wide call activity: whatever may change tools without a version
/// bump happens inside a call (or an explicit refresh), and moves it.
/// One per server, shared by its watchers.
#[derive(Debug)]
pub struct CallActivity {
    /// Moves when a call starts, when it ends, and on explicit refreshes.
    epoch: AtomicU64,
    /// Calls running now.
    in_flight: AtomicU64,
    /// Moves when an anonymous call ends: every anonymous watcher follows it.
    anonymous: watch::Sender<u64>,
}

impl Default for CallActivity {
    fn default() -> CallActivity {
        CallActivity {
            epoch: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            anonymous: watch::channel(0).0,
        }
    }
}

impl CallActivity {
    /// Counts a call of `view`'s consumer from now until the guard drops;
    /// dropping it also pokes that view (and, for an `anonymous` caller,
    /// every anonymous watcher, with one signal), so their watchers
    /// re-check. Hold it for the whole call.
    pub fn begin(&self, view: Arc<ConsumerView>, anonymous: bool) -> CallGuard<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.epoch.fetch_add(1, Ordering::SeqCst);
        CallGuard {
            activity: self,
            view,
            anonymous,
        }
    }

    /// Records a change made outside any call (an explicit refresh).
    pub fn touch(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

/// A running call (see [`CallActivity::begin`]).
#[derive(Debug)]
pub struct CallGuard<'a> {
    activity: &'a CallActivity,
    view: Arc<ConsumerView>,
    anonymous: bool,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.view.settled();
        if self.anonymous {
            self.activity
                .anonymous
                .send_modify(|n| *n = n.wrapping_add(1));
        }
        self.activity.epoch.fetch_add(1, Ordering::SeqCst);
        self.activity.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A moment a watcher must cover from: every change after it is followed
/// by a notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    version: u64,
    epoch: u64,
    /// No call was running (one that was could change state at any time).
    idle: bool,
}

impl Mark {
    /// Now.
    pub fn now(registry: &Registry, activity: &CallActivity) -> Mark {
        let idle = activity.in_flight.load(Ordering::SeqCst) == 0;
        let epoch = activity.epoch.load(Ordering::SeqCst);
        Mark {
            version: registry.version(),
            epoch,
            idle,
        }
    }

    /// A moment nothing is known about: whoever covers from it notifies once.
    pub fn unknown() -> Mark {
        Mark {
            version: 0,
            epoch: 0,
            idle: false,
        }
    }

    /// Whether tools may have changed between `self` and `later`.
    fn moved(self, later: Mark) -> bool {
        !self.idle || !later.idle || self.epoch != later.epoch || self.version != later.version
    }
}

/// Follows one consumer's view and reports when what a client is served
/// changed since it was last told.
pub struct ChangeWatcher {
    view: Arc<ConsumerView>,
    version: watch::Receiver<u64>,
    poke: watch::Receiver<u64>,
    /// An anonymous caller's watcher: other anonymous calls' signal.
    anonymous: Option<watch::Receiver<u64>>,
    /// Until when wake-ups by calls gather (anonymous watchers only).
    gathering: Option<crate::adapter::time::Instant>,
    /// A wake-up was taken but its comparison not made yet (the wait was
    /// interrupted, as a `select!` beside other work does): the next wait
    /// compares at once.
    unchecked: bool,
    delivered: Arc<Vec<Tool>>,
}

impl std::fmt::Debug for ChangeWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeWatcher")
            .field("view", &self.view)
            .finish_non_exhaustive()
    }
}

impl ChangeWatcher {
    /// Attaches to `view`, covering every change after `since`. Returns the
    /// watcher and whether a notification is due at once.
    pub fn attach(
        registry: &Registry,
        activity: &CallActivity,
        view: Arc<ConsumerView>,
        since: Mark,
    ) -> (ChangeWatcher, bool) {
        // Wake-ups first, then the baseline, then the activity check: a
        // change lands either before the baseline (the check sees it) or
        // after the subscription (it wakes the watcher).
        let version = registry.watch_version();
        let poke = view.subscribe();
        let anonymous = view.is_anonymous().then(|| activity.anonymous.subscribe());
        let delivered = view.current();
        let due = since.moved(Mark::now(registry, activity));
        let watcher = ChangeWatcher {
            view,
            version,
            poke,
            anonymous,
            gathering: None,
            unchecked: false,
            delivered,
        };
        (watcher, due)
    }

    /// Waits until the tools a client would be served differ from those
    /// last delivered, and takes the new ones as delivered (the caller
    /// sends the notification). `None` once nothing can change any more
    /// (the registry was disposed). Cancel-safe: a wake-up an interrupted
    /// wait took is compared by the next one.
    pub async fn changed(&mut self) -> Option<()> {
        loop {
            if !self.unchecked {
                self.wait().await?;
                self.unchecked = true;
            }
            // A mutation often comes in a burst (a page unmounts several
            // components): let it finish, compare once.
            tokio::task::yield_now().await;
            let now = self.view.current();
            self.unchecked = false;
            // The very build last delivered (shared builds often are).
            if !Arc::ptr_eq(&self.delivered, &now) && !same_served(&self.delivered, &now) {
                self.delivered = now;
                return Some(());
            }
        }
    }

    /// Waits for the next wake-up that may have changed the tools.
    async fn wait(&mut self) -> Option<()> {
        loop {
            let by_call = match self.gathering {
                // Calls' wake-ups gather until the spell ends; a version
                // change is never held back.
                Some(until) => tokio::select! {
                    moved = self.version.changed() => {
                        moved.ok()?;
                        false
                    }
                    () = crate::adapter::time::sleep_until(until) => {
                        self.gathering = None;
                        let poked = self.poke.has_changed().unwrap_or(false)
                            || self
                                .anonymous
                                .as_ref()
                                .is_some_and(|a| a.has_changed().unwrap_or(false));
                        if !poked {
                            continue;
                        }
                        self.poke.mark_unchanged();
                        if let Some(anonymous) = &mut self.anonymous {
                            anonymous.mark_unchanged();
                        }
                        true
                    }
                },
                None => tokio::select! {
                    moved = self.version.changed() => {
                        moved.ok()?;
                        false
                    }
                    moved = self.poke.changed() => {
                        moved.ok()?;
                        true
                    }
                    moved = async {
                        match &mut self.anonymous {
                            Some(anonymous) => anonymous.changed().await,
                            None => std::future::pending().await,
                        }
                    } => {
                        moved.ok()?;
                        true
                    }
                },
            };
            if self.anonymous.is_some() {
                if by_call {
                    // Another caller's call moved only the shared signal
                    // (and, poking its own view, the views' shared count):
                    // move this view's own stamp, so its tools are rebuilt
                    // (or taken from a build made since) rather than served
                    // from its last build.
                    self.view.restamp();
                    self.poke.mark_unchanged();
                }
                self.gathering = Some(crate::adapter::time::Instant::now() + ANONYMOUS_SPELL);
            }
            return Some(());
        }
    }
}

/// The tools a client is served: the available ones (live notes and
/// unavailable tools are not served).
pub fn served(tools: &[Tool]) -> impl Iterator<Item = &Tool> {
    tools.iter().filter(|tool| tool.state().available)
}

/// Whether two tool lists serve the same tools: the available ones, with
/// the same names, descriptions, schemas and target kinds, effects and
/// idempotency.
pub fn same_served(a: &[Tool], b: &[Tool]) -> bool {
    let (mut a, mut b) = (served(a), served(b));
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if served_alike(x, y) => {}
            _ => return false,
        }
    }
}

fn served_alike(a: &Tool, b: &Tool) -> bool {
    let targets = match (a.target(), b.target()) {
        (Some(x), Some(y)) => {
            x.kind == y.kind && x.effect == y.effect && x.idempotent == y.idempotent
        }
        (None, None) => true,
        _ => false,
    };
    targets
        && a.name() == b.name()
        && a.description() == b.description()
        && a.input_schema() == b.input_schema()
}
