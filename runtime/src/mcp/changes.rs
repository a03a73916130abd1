//! Change delivery: when a session is told `notifications/tools/list_changed`.
//!
//! A consumer's tools change in two ways: a surface mutation (the registry
//! version moves) or live state that `when`/`describe` read (no version
//! bump: re-evaluated when the tools are built). A [`Watcher`] follows one
//! consumer's [`View`]: it wakes when the version moves or the view is
//! poked (the consumer's own call settled, or an explicit refresh),
//! rebuilds that one view and compares what a client would be served with
//! what it last delivered. Calls never touch other consumers' views.
//!
//! A watcher starts after the moment it must cover (rmcp acknowledges a
//! `subscriptions/listen` before the handler runs; `notifications/initialized`
//! is handled concurrently with later requests). So the moment is a
//! [`Mark`] taken *before* the acknowledgment (or the `initialize` response):
//! the registry version and the server's call activity. Attaching, a
//! watcher first subscribes to its wake-ups, then builds the tools it
//! compares against, then reads the activity again: if anything could have
//! changed the tools in between, the first notification is due at once.
//! Nothing is ever marked delivered that was not compared and sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

use super::view::View;
use crate::registry::Registry;
use crate::toolset::Tool;

/// How long an anonymous caller's watcher lets further wake-ups by other
/// anonymous calls gather after it re-checked (its first wake-up after a
/// quiet spell re-checks at once; version changes are never held back).
/// Bounds the re-checks of many idle listen streams under a stream of calls
/// to one per stream per spell, whatever the call rate.
const ANONYMOUS_SPELL: std::time::Duration = std::time::Duration::from_millis(200);

/// Server-wide call activity: whatever may change tools without a version
/// bump happens inside a call (or an explicit refresh), and moves `epoch`.
#[derive(Debug)]
pub(super) struct Activity {
    /// Moves when a call starts, when it ends, and on explicit refreshes.
    epoch: AtomicU64,
    /// Calls running now.
    in_flight: AtomicU64,
    /// Moves when an anonymous call ends: every anonymous watcher follows it.
    anonymous: watch::Sender<u64>,
}

impl Default for Activity {
    fn default() -> Activity {
        Activity {
            epoch: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            anonymous: watch::channel(0).0,
        }
    }
}

impl Activity {
    /// Counts a call from now until the guard drops; dropping it also
    /// pokes the caller's view (and, for an anonymous caller, every
    /// anonymous watcher, with one signal), so their watchers re-check.
    pub(super) fn begin(&self, (view, anonymous): (Arc<View>, bool)) -> Busy<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.epoch.fetch_add(1, Ordering::SeqCst);
        Busy {
            activity: self,
            view,
            anonymous,
        }
    }

    /// Records a change made outside any call (an explicit refresh).
    pub(super) fn touch(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

/// A running call (see [`Activity::begin`]).
pub(super) struct Busy<'a> {
    activity: &'a Activity,
    view: Arc<View>,
    anonymous: bool,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.view.poke();
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
pub(super) struct Mark {
    version: u64,
    epoch: u64,
    /// No call was running (one that was could change state at any time).
    idle: bool,
}

impl Mark {
    /// Now.
    pub(super) fn now(registry: &Registry, activity: &Activity) -> Mark {
        let idle = activity.in_flight.load(Ordering::SeqCst) == 0;
        let epoch = activity.epoch.load(Ordering::SeqCst);
        Mark {
            version: registry.version(),
            epoch,
            idle,
        }
    }

    /// A moment nothing is known about: whoever covers from it notifies once.
    pub(super) fn unknown() -> Mark {
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
pub(super) struct Watcher {
    view: Arc<View>,
    registry: Registry,
    version: watch::Receiver<u64>,
    poke: watch::Receiver<u64>,
    /// An anonymous caller's watcher: other anonymous calls' signal.
    anonymous: Option<watch::Receiver<u64>>,
    /// Until when wake-ups by calls gather (anonymous watchers only).
    gathering: Option<tokio::time::Instant>,
    delivered: Arc<Vec<Tool>>,
}

impl Watcher {
    /// Attaches to `view`, covering every change after `since`. Returns the
    /// watcher and whether a notification is due at once.
    pub(super) fn attach(
        registry: &Registry,
        activity: &Activity,
        view: Arc<View>,
        since: Mark,
    ) -> (Watcher, bool) {
        // Wake-ups first, then the baseline, then the activity check: a
        // change lands either before the baseline (the check sees it) or
        // after the subscription (it wakes the watcher).
        let version = registry.watch_version();
        let poke = view.subscribe();
        let anonymous = view.is_anonymous().then(|| activity.anonymous.subscribe());
        let delivered = view.current(registry);
        let due = since.moved(Mark::now(registry, activity));
        let watcher = Watcher {
            view,
            registry: registry.clone(),
            version,
            poke,
            anonymous,
            gathering: None,
            delivered,
        };
        (watcher, due)
    }

    /// Waits until the tools a client would be served differ from those
    /// last delivered, and takes the new ones as delivered (the caller
    /// sends the notification). `None` once nothing can change any more.
    pub(super) async fn changed(&mut self) -> Option<()> {
        loop {
            let by_call = match self.gathering {
                // Calls' wake-ups gather until the spell ends; a version
                // change is never held back.
                Some(until) => tokio::select! {
                    moved = self.version.changed() => {
                        moved.ok()?;
                        false
                    }
                    () = tokio::time::sleep_until(until) => {
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
                    // Another caller's call moved only the shared signal:
                    // move this view's own stamp, so its tools are rebuilt
                    // rather than served from the last build.
                    self.view.poke();
                    self.poke.mark_unchanged();
                }
                self.gathering = Some(tokio::time::Instant::now() + ANONYMOUS_SPELL);
            }
            // A mutation often comes in a burst (a page unmounts several
            // components): let it finish, compare once.
            tokio::task::yield_now().await;
            let now = self.view.current(&self.registry);
            if !same_served(&self.delivered, &now) {
                self.delivered = now;
                return Some(());
            }
        }
    }
}

/// Whether two tool lists serve the same MCP tools: the available ones,
/// with the same names, descriptions, schemas and annotations (live notes
/// and unavailable tools are not served).
pub(super) fn same_served(a: &[Tool], b: &[Tool]) -> bool {
    let mut a = a.iter().filter(|tool| tool.state().available);
    let mut b = b.iter().filter(|tool| tool.state().available);
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
