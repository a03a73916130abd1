//! The listener's open connections, and which one gives way when the cap is
//! reached.
//!
//! Each open connection is in one of four states: **idle** (no request:
//! not yet a complete head, or a keep-alive pause), **uploading** (a
//! request whose body is still arriving), **busy** (a request being
//! answered, a stream) or **upgraded** (a websocket: it keeps its place
//! until it closes, so upgrades never escape the cap). A newcomer arriving
//! at the cap takes the place of the connection idle longest, else of the
//! upload that has been slower than [`MIN_BODY_RATE`] for longest past
//! [`BODY_GRACE`], else of the connection whose client has not read what
//! it was sent for longest past [`STALL_GRACE`]; only when every connection
//! is doing work at a fair pace does it wait for one to close (or to fall
//! behind). A connection that gives way is shut down at the socket, so
//! even an upgraded one ends. So idle, trickling and unread connections —
//! a slow-client attack's whole arsenal — never keep anyone else out.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustc_hash::FxHashMap;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a body may take before it must keep up [`MIN_BODY_RATE`].
pub(super) const BODY_GRACE: Duration = Duration::from_secs(1);

/// The slowest a body may arrive after [`BODY_GRACE`], in bytes per second
/// (any real client on any real network sends a JSON-RPC body far faster).
pub(super) const MIN_BODY_RATE: u64 = 2_048;

/// How long a client may leave what it was sent unread before its
/// connection gives way to a newcomer at the cap.
pub(super) const STALL_GRACE: Duration = Duration::from_secs(2);

const IDLE: u8 = 0;
const UPLOADING: u8 = 1;
const BUSY: u8 = 2;
const UPGRADED: u8 = 3;

/// One open connection's state, shared by its task, its requests and the
/// table.
#[derive(Debug)]
pub(super) struct ConnectionState {
    state: AtomicU8,
    /// When it entered its state (ms since the table's epoch).
    since_ms: AtomicU64,
    /// Bytes of the body arriving now.
    received: AtomicU64,
    /// Since when a write has waited for the client to read (ms since the
    /// table's epoch, plus one; zero while nothing waits).
    write_blocked: AtomicU64,
    /// Fired when it is shed: its task closes it.
    shed: CancellationToken,
    /// A handle on its socket, to shut it down when shed (an upgraded
    /// connection has no task of ours left to close it).
    socket: Mutex<Option<std::net::TcpStream>>,
    /// Wakes a newcomer waiting for a place (it went idle).
    table_changed: Arc<Notify>,
    epoch: Instant,
}

impl ConnectionState {
    fn now_ms(&self) -> u64 {
        crate::adapter::millis(self.epoch.elapsed())
    }

    fn enter(&self, state: u8) {
        self.since_ms.store(self.now_ms(), Ordering::Relaxed);
        self.received.store(0, Ordering::Relaxed);
        self.state.store(state, Ordering::Release);
    }

    /// A request's head arrived: it is busy until [`idle`](Self::idle).
    pub(super) fn busy(&self) {
        self.enter(BUSY);
    }

    /// Its request's body is arriving.
    pub(super) fn uploading(&self) {
        self.enter(UPLOADING);
    }

    /// `bytes` more of the body arrived.
    pub(super) fn received(&self, bytes: usize) {
        self.received
            .fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The body arrived: the request is being answered.
    pub(super) fn answering(&self) {
        self.state.store(BUSY, Ordering::Release);
    }

    /// Its response ended: waiting for the next request.
    pub(super) fn idle(&self) {
        self.enter(IDLE);
        self.table_changed.notify_one();
    }

    /// It switched protocols (a websocket): it keeps its place, busy,
    /// until it closes.
    pub(super) fn upgraded(&self) {
        self.enter(UPGRADED);
    }

    /// A write waits for the client to read.
    pub(super) fn write_blocked(&self) {
        let now = self.now_ms().saturating_add(1);
        let _ = self
            .write_blocked
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// A write went through.
    pub(super) fn wrote(&self) {
        self.write_blocked.store(0, Ordering::Relaxed);
    }

    /// How long a write has waited for the client to read.
    pub(super) fn stalled_for(&self) -> Duration {
        match self.write_blocked.load(Ordering::Relaxed) {
            0 => Duration::ZERO,
            since => Duration::from_millis(self.now_ms().saturating_sub(since - 1)),
        }
    }

    /// Keeps `socket` (a handle on the connection's socket) to shut it
    /// down when the connection gives way.
    pub(super) fn hold_socket(&self, socket: std::net::TcpStream) {
        *self.socket.lock().unwrap_or_else(PoisonError::into_inner) = Some(socket);
    }

    /// Gives way: its task (if any) closes it, and its socket is shut
    /// down, which ends an upgraded connection too.
    fn give_way(&self) {
        self.shed.cancel();
        if let Some(socket) = self
            .socket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Fired when the connection is shed.
    pub(super) fn shed(&self) -> &CancellationToken {
        &self.shed
    }

    /// How much room it would give a newcomer now: `Some(rank)`, lower
    /// ranks first, or `None` while it does work at a fair pace.
    fn sheddable(&self, now_ms: u64) -> Option<(u8, u64)> {
        let since = self.since_ms.load(Ordering::Relaxed);
        let for_ms = now_ms.saturating_sub(since);
        let stalled = match self.write_blocked.load(Ordering::Relaxed) {
            0 => 0,
            blocked => now_ms.saturating_sub(blocked - 1),
        };
        let stall_grace = crate::adapter::millis(STALL_GRACE);
        if stalled > stall_grace {
            // Its client stopped reading: the longest stalled first.
            return Some((2, u64::MAX - stalled));
        }
        match self.state.load(Ordering::Acquire) {
            // Idle longest first.
            IDLE => Some((0, u64::MAX - for_ms)),
            UPLOADING => {
                let grace = crate::adapter::millis(BODY_GRACE);
                let owed = for_ms.saturating_sub(grace).saturating_mul(MIN_BODY_RATE) / 1000;
                let received = self.received.load(Ordering::Relaxed);
                // Behind the minimum rate: the furthest behind first.
                (received < owed).then(|| (1, u64::MAX - (owed - received)))
            }
            _ => None,
        }
    }
}

/// The open connections, bounded by the cap.
#[derive(Debug)]
pub(super) struct Connections {
    cap: usize,
    open: Mutex<(FxHashMap<u64, Arc<ConnectionState>>, u64)>,
    /// A connection closed or went idle.
    freed: Arc<Notify>,
    epoch: Instant,
}

/// A place in the table: dropped when its connection closes.
#[derive(Debug)]
pub(super) struct Place {
    id: u64,
    state: Arc<ConnectionState>,
    table: Arc<Connections>,
}

impl Place {
    /// The connection's state.
    pub(super) fn state(&self) -> &Arc<ConnectionState> {
        &self.state
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.table
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .remove(&self.id);
        self.table.freed.notify_one();
    }
}

impl Connections {
    /// A table of at most `cap` connections (at least one).
    pub(super) fn new(cap: usize) -> Arc<Connections> {
        Arc::new(Connections {
            cap: cap.max(1),
            open: Mutex::new((FxHashMap::default(), 0)),
            freed: Arc::new(Notify::new()),
            epoch: Instant::now(),
        })
    }

    /// A place for a connection just accepted: at once below the cap; at
    /// the cap, the place of the connection that gives way (idle longest,
    /// else furthest behind the minimum body rate, else unread longest),
    /// which is shut down; else once a connection closes, goes idle or
    /// falls behind (looked at again every second).
    pub(super) async fn admit(self: &Arc<Self>) -> Place {
        loop {
            let freed = self.freed.notified();
            if let Some(place) = self.try_admit() {
                return place;
            }
            let _ = tokio::time::timeout(Duration::from_secs(1), freed).await;
        }
    }

    fn try_admit(self: &Arc<Self>) -> Option<Place> {
        let now_ms = crate::adapter::millis(self.epoch.elapsed());
        let mut guard = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let (open, next) = &mut *guard;
        if open.len() >= self.cap {
            let giving_way = open
                .iter()
                .filter_map(|(id, state)| state.sheddable(now_ms).map(|rank| (rank, *id)))
                .min()
                .map(|(_, id)| id)?;
            if let Some(shed) = open.remove(&giving_way) {
                shed.give_way();
            }
        }
        *next += 1;
        let id = *next;
        let state = Arc::new(ConnectionState {
            state: AtomicU8::new(IDLE),
            since_ms: AtomicU64::new(now_ms),
            received: AtomicU64::new(0),
            write_blocked: AtomicU64::new(0),
            shed: CancellationToken::new(),
            socket: Mutex::new(None),
            table_changed: Arc::clone(&self.freed),
            epoch: self.epoch,
        });
        open.insert(id, Arc::clone(&state));
        Some(Place {
            id,
            state,
            table: Arc::clone(self),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use super::*;

    /// A table whose clock started an hour ago, so states can be aged.
    fn table(cap: usize) -> Arc<Connections> {
        let table = Connections::new(cap);
        let mut aged = Arc::try_unwrap(table).unwrap();
        aged.epoch = Instant::now()
            .checked_sub(Duration::from_secs(3600))
            .unwrap();
        Arc::new(aged)
    }

    /// `state` entered its state `ms` earlier than it did.
    fn age(state: &ConnectionState, ms: u64) {
        state.since_ms.fetch_sub(ms, Ordering::Relaxed);
    }

    fn admit_now(table: &Arc<Connections>) -> Option<Place> {
        table.try_admit()
    }

    #[test]
    fn idle_connections_give_way_first_then_slow_uploads_never_fair_work() {
        let table = table(3);
        let idle = admit_now(&table).unwrap();
        let busy = admit_now(&table).unwrap();
        busy.state().busy();
        let upload = admit_now(&table).unwrap();
        upload.state().uploading();
        // At the cap: the idle one gives way.
        let first = admit_now(&table).unwrap();
        assert!(idle.state().shed().is_cancelled());
        assert!(!upload.state().shed().is_cancelled());
        first.state().busy();
        // A trickling upload past its grace gives way next; busy never.
        age(upload.state(), 3_000);
        upload.state().received(10);
        let second = admit_now(&table).unwrap();
        second.state().busy();
        assert!(upload.state().shed().is_cancelled());
        assert!(!busy.state().shed().is_cancelled());
        // Only busy connections: a newcomer waits for one to close.
        drop(idle);
        drop(upload);
        assert!(admit_now(&table).is_none(), "no connection gives way");
        drop(busy);
        assert!(admit_now(&table).is_some());
    }

    #[test]
    fn an_upload_keeping_the_minimum_rate_is_never_shed() {
        let table = table(1);
        let upload = admit_now(&table).unwrap();
        upload.state().uploading();
        age(upload.state(), 10_000);
        upload
            .state()
            .received(usize::try_from(MIN_BODY_RATE * 10).unwrap());
        assert!(admit_now(&table).is_none());
        assert!(!upload.state().shed().is_cancelled());
    }

    #[test]
    fn the_idle_longest_gives_way_first() {
        let table = table(2);
        let newer = admit_now(&table).unwrap();
        let older = admit_now(&table).unwrap();
        age(older.state(), 5_000);
        let _third = admit_now(&table).unwrap();
        assert!(older.state().shed().is_cancelled());
        assert!(!newer.state().shed().is_cancelled());
    }
}
