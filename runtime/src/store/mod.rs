//! The shared store: the seam through which the replicas of one surface
//! share the state its guarantees rest on, so that several processes behind
//! a load balancer behave as one registry.
//!
//! A registry keeps all of its state in its own process by default (no
//! store, no cost: the in-process dedupe window, buckets and audit buffer
//! run exactly as without this module). Configure a store with
//! [`RegistryBuilder::shared_store`](crate::registry::RegistryBuilder::shared_store)
//! and the registry also consults it for:
//!
//! | state | operations | what holds across replicas |
//! |---|---|---|
//! | the dedupe window | [`claim`](SharedStore::claim), [`wait`](SharedStore::wait), [`settle`](SharedStore::settle), [`release`](SharedStore::release) | a call with an invocation id runs at most once across every replica within the window: a retry that lands on another replica joins the running call (woken by the store's notification) or replays its settled result verbatim; the same id with another request is `INVOCATION_CONFLICT` |
//! | rate-limit buckets | [`take`](SharedStore::take) | the built-in [`rate_limit`](crate::policy::rate_limit) holds for the sum of the replicas, on the store's clock |
//! | confirmation quotas | [`claim`](SharedStore::claim) under a quota, [`release`](SharedStore::release) | a principal's open confirmations count once across the replicas |
//! | approvals | [`put`](SharedStore::put), [`get`](SharedStore::get), [`claim`](SharedStore::claim) | the replica holding a request offers it (any replica's console lists it and answers it) and publishes its approval; the agent's retry redeems it, once, on any replica |
//! | the audit | [`append`](SharedStore::append) | one ordered record of every settled call, whichever replica settled it |
//!
//! **Failure is closed.** When the store cannot be reached, a call that
//! needs it does not run: it settles `EXECUTION_FAILED` with reason
//! `store-unavailable`, `retry: after-delay` — retried with the *same*
//! invocation id once the store is back, it runs once. A replica that dies
//! while it leads a call leaves the call's claim in the store until its
//! lease (the call's time limit and the confirmation TTL) ends; retries in
//! that time wait and settle `TIMEOUT` (the effects are unknown), never a
//! second run.
//!
//! Two implementations ship: [`MemoryStore`], in this process (several
//! registries of one process, and tests of the semantics without a
//! server), and `RedisStore` (feature `redis`), on a Redis or Valkey
//! server the replicas share. Implement [`SharedStore`] for another store;
//! the contract of each operation is on its method.

mod held;
mod keys;
mod memory;
#[cfg(all(
    feature = "redis",
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
mod redis;

pub(crate) use held::Held;
pub use keys::{InvalidNamespace, MAX_NAMESPACE_LEN, Namespace};
pub use memory::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, MemoryStore};
#[cfg(all(
    feature = "redis",
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
pub use redis::{DEFAULT_TIMEOUT, MAX_WAITERS, RedisStore, RedisStoreError};

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A registry's shared store under its surface's namespace.
#[derive(Clone)]
pub(crate) struct Attached {
    pub(crate) store: std::sync::Arc<dyn SharedStore>,
    pub(crate) namespace: Namespace,
}

/// A boxed future borrowed for `'a`, as the store's methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The longest time to live a store is asked for (30 days): longer ones
/// (a call with no time limit) are clamped to it.
pub const MAX_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// `ttl` within [1 ms, [`MAX_TTL`]].
pub(crate) fn bounded(ttl: Duration) -> Duration {
    ttl.clamp(Duration::from_millis(1), MAX_TTL)
}

/// `ttl` within [1 ms, [`MAX_TTL`]], in milliseconds.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    crate::util::millis::millis(bounded(ttl))
}

/// The length of a [`Fingerprint`]'s text: 32 lowercase hexadecimal digits.
pub const FINGERPRINT_LEN: usize = 32;

/// What a dedupe record compares: 128 bits of a SHA-256 over the request's
/// fingerprint and the call's reach, as 32 lowercase hexadecimal digits —
/// the same on every replica.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; FINGERPRINT_LEN]);

impl Fingerprint {
    /// The fingerprint of `digest`'s first 16 bytes.
    pub fn from_bytes(digest: [u8; 16]) -> Fingerprint {
        const fn hex(nibble: u8) -> u8 {
            match nibble {
                0..=9 => b'0' + nibble,
                _ => b'a' + (nibble - 10),
            }
        }
        let mut text = [b'0'; FINGERPRINT_LEN];
        for (pair, byte) in text.chunks_exact_mut(2).zip(digest) {
            if let [high, low] = pair {
                *high = hex(byte >> 4);
                *low = hex(byte & 0x0f);
            }
        }
        Fingerprint(text)
    }

    /// Its text (32 lowercase hexadecimal digits).
    pub fn as_str(&self) -> &str {
        // Only ASCII hexadecimal digits are ever written.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// 128 random bits as 32 hexadecimal digits.
pub(crate) fn random() -> Fingerprint {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: the process's random hasher, twice.
        use std::hash::BuildHasher;
        let state = std::hash::RandomState::new();
        let (a, b) = (state.hash_one(1u8), state.hash_one(2u8));
        for (slot, byte) in bytes
            .iter_mut()
            .zip(a.to_le_bytes().into_iter().chain(b.to_le_bytes()))
        {
            *slot = byte;
        }
    }
    Fingerprint::from_bytes(bytes)
}

/// 128 random bits as 32 hexadecimal digits (a nonce).
pub(crate) fn nonce() -> String {
    random().as_str().to_owned()
}

/// A claim on a dedupe key, made by the attempt that asks for it
/// ([`Lease::new`]) and presented to [`claim`](SharedStore::claim),
/// [`settle`](SharedStore::settle) and [`release`](SharedStore::release),
/// which act only while the key is still this lease's (a lease that ran out
/// and was claimed anew is not). Made before the claim is sent, so an
/// attempt dropped while its claim is in flight can still give it back.
///
/// A lease may count against a quota: a set of the keys one party holds
/// (settled records and running claims), at most `max` at once.
#[derive(Clone, PartialEq, Eq)]
pub struct Lease {
    fingerprint: Fingerprint,
    token: [u8; 32],
    quota: Option<(std::sync::Arc<str>, usize)>,
}

impl Lease {
    /// A new lease on `fingerprint`, with a random token.
    pub fn new(fingerprint: Fingerprint) -> Lease {
        Lease {
            fingerprint,
            token: random().0,
            quota: None,
        }
    }

    /// This lease counted in the quota set `key`, which holds at most `max`
    /// keys: a claim beyond it is [`Claim::Busy`].
    #[must_use]
    pub fn within(mut self, key: &str, max: usize) -> Lease {
        self.quota = Some((std::sync::Arc::from(key), max));
        self
    }

    /// The fingerprint of the call it leads.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// Its token (32 lowercase hexadecimal digits).
    pub fn token(&self) -> &str {
        std::str::from_utf8(&self.token).unwrap_or_default()
    }

    /// The quota set it counts in, and its bound.
    pub fn quota(&self) -> Option<(&str, usize)> {
        self.quota.as_ref().map(|(key, max)| (&**key, *max))
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The token is the lease's authority: never printed.
        f.debug_struct("Lease")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

/// What [`claim`](SharedStore::claim) or [`wait`](SharedStore::wait) found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The key was free: this attempt leads the call, under its lease.
    Leader,
    /// The key was free, but the lease's quota is full: nothing was
    /// claimed.
    Busy,
    /// The same request is running (on this replica or another).
    Running,
    /// The same request settled: its record, as
    /// [`settle`](SharedStore::settle) stored it.
    Settled(String),
    /// The key holds another request (another fingerprint).
    Conflict,
}

/// What [`take`](SharedStore::take) decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// A token was taken.
    Allowed,
    /// None was left: retry after this many milliseconds.
    Refused {
        /// When a token will be there.
        retry_after_ms: u64,
    },
}

/// Why a store operation failed. The registry fails closed on every one.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be reached or did not answer in time.
    Unavailable(String),
    /// The store is at its bound (count or bytes) and keeps what it holds.
    Full,
    /// The store answered something this client does not understand.
    Protocol(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unavailable(why) => write!(f, "the shared store is unavailable: {why}"),
            StoreError::Full => f.write_str("the shared store is full"),
            StoreError::Protocol(why) => write!(f, "the shared store answered oddly: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// The state several replicas of one surface share (see the
/// [module docs](self)). Keys come from a [`Namespace`]: each is bounded
/// in length and carries the surface's namespace. Every operation is
/// atomic on the store; every value the store keeps has a time to live.
pub trait SharedStore: Send + Sync + 'static {
    /// A short name for logs and errors (`memory`, `redis`).
    fn name(&self) -> &str;

    /// Claims dedupe `key` for `lease` (a request with its fingerprint). A
    /// free key (never used, released, or past its lease or window)
    /// becomes [`Claim::Leader`], held for `ttl` unless settled or released
    /// before — or [`Claim::Busy`] when the lease's quota is full; a key
    /// running or settled with the same fingerprint is [`Claim::Running`]
    /// or [`Claim::Settled`]; with another, [`Claim::Conflict`].
    fn claim<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>>;

    /// Waits until `key` is no longer running, then claims it as
    /// [`claim`](Self::claim) does (never [`Claim::Running`]). Woken by the
    /// store's notification of a settlement or release, not by polling; the
    /// caller bounds the wait.
    fn wait<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>>;

    /// Settles `key`, while it is still `lease`'s, with `record`, kept for
    /// `keep` (in its quota too), and wakes its waiters. `Ok(false)`: the key was no longer
    /// this lease's (nothing was written).
    fn settle<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        record: &'a str,
        keep: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Frees `key`, while it is still `lease`'s (the attempt ended without a
    /// result; its quota too), and wakes its waiters.
    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Takes a token from bucket `key`: `limit` tokens, refilled evenly
    /// over `window`, on the store's own clock (so replicas agree).
    fn take<'a>(
        &'a self,
        key: &'a str,
        limit: u32,
        window: Duration,
    ) -> BoxFuture<'a, Result<Taken, StoreError>>;

    /// Appends `record` to the ordered log `key`, which keeps its newest
    /// `keep` records.
    fn append<'a>(
        &'a self,
        key: &'a str,
        record: &'a str,
        keep: usize,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The newest `count` records of log `key`, oldest first.
    fn records<'a>(
        &'a self,
        key: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;

    /// Puts `value` under `key` for `ttl`, and announces `key` to its
    /// watchers.
    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Puts `value` under `key` for `ttl` only if `key` holds nothing, and
    /// announces it; `Ok(false)`: it held something (nothing was written).
    fn put_new<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// What `key` holds.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>>;

    /// Removes `key`, and announces it.
    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Waits until `key` holds a value, and returns it. Woken by the
    /// store's announcements, not by polling; the caller bounds the wait.
    fn watch<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<String, StoreError>>;

    /// Adds `member` to the set `key` for `ttl` (a member's time is its
    /// own; the set lives as long as its longest).
    fn enroll<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Removes `member` from the set `key`.
    fn unenroll<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// At most `count` members of the set `key` whose time has not run out.
    fn members<'a>(
        &'a self,
        key: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;
}

impl fmt::Debug for dyn SharedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedStore({})", self.name())
    }
}
