//! The shared store in this process: the seam's semantics without a
//! server, for several registries of one process and for tests, bounded in
//! count and bytes, on tokio's clock (a paused test runtime controls it).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use super::{BoxFuture, Claim, Fingerprint, Lease, SharedStore, StoreError, Taken};
use crate::util::time::Instant;

/// Entries a [`MemoryStore`] keeps by default.
pub const DEFAULT_MAX_ENTRIES: usize = 100_000;

/// Bytes of keys and values a [`MemoryStore`] keeps by default (64 MiB).
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

enum Value {
    Running(Lease),
    Settled {
        fingerprint: Fingerprint,
        record: String,
    },
    Bucket {
        tokens: f64,
        at_ms: u64,
    },
    Log(VecDeque<String>),
    Text(String),
    /// Members and when each one's time runs out.
    Set(HashMap<String, Instant>),
}

struct Entry {
    value: Value,
    /// `None`: kept until the store is dropped (logs).
    expires: Option<Instant>,
    bytes: usize,
}

struct Inner {
    entries: HashMap<String, Entry>,
    bytes: usize,
    /// Waiters by key (a key is here only while someone waits on it).
    waiters: HashMap<String, Arc<Notify>>,
    /// When expired entries were last swept.
    swept: Option<Instant>,
}

/// How often a full store sweeps its expired entries at most.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// A [`SharedStore`] in this process (see the [module docs](super)).
///
/// ```
/// use std::sync::Arc;
/// use agent_surface::registry::Registry;
/// use agent_surface::store::{MemoryStore, Namespace};
///
/// let store = Arc::new(MemoryStore::new());
/// let namespace = Namespace::new("devices").unwrap();
/// // Two registries that behave as one for at-most-once, limits and audit.
/// let a = Registry::builder().shared_store(store.clone(), namespace.clone()).build();
/// let b = Registry::builder().shared_store(store, namespace).build();
/// # drop((a, b));
/// ```
pub struct MemoryStore {
    inner: Mutex<Inner>,
    max_entries: usize,
    max_bytes: usize,
    epoch: Instant,
}

impl Default for MemoryStore {
    fn default() -> MemoryStore {
        MemoryStore::new()
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("max_entries", &self.max_entries)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// A store with the default bounds ([`DEFAULT_MAX_ENTRIES`],
    /// [`DEFAULT_MAX_BYTES`]).
    pub fn new() -> MemoryStore {
        MemoryStore::with_bounds(DEFAULT_MAX_ENTRIES, DEFAULT_MAX_BYTES)
    }

    /// A store that keeps at most `max_entries` entries and `max_bytes`
    /// bytes of keys and values. At its bound it refuses what would grow it
    /// ([`StoreError::Full`]) and keeps what it holds: a dedupe record is
    /// never evicted to make room.
    pub fn with_bounds(max_entries: usize, max_bytes: usize) -> MemoryStore {
        MemoryStore {
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                bytes: 0,
                waiters: HashMap::new(),
                swept: None,
            }),
            max_entries,
            max_bytes,
            epoch: Instant::now(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live entry of `key` (an expired one is removed).
    fn live<'i>(inner: &'i mut Inner, key: &str, now: Instant) -> Option<&'i mut Entry> {
        let expired = inner
            .entries
            .get(key)
            .is_some_and(|entry| entry.expires.is_some_and(|at| at <= now));
        if expired && let Some(entry) = inner.entries.remove(key) {
            inner.bytes = inner.bytes.saturating_sub(entry.bytes);
        }
        inner.entries.get_mut(key)
    }

    /// Puts `value` under `key`, within the bounds (expired entries are
    /// swept first when they are reached).
    fn insert(
        &self,
        inner: &mut Inner,
        key: &str,
        value: Value,
        bytes: usize,
        expires: Option<Instant>,
        now: Instant,
    ) -> Result<(), StoreError> {
        let bytes = bytes + key.len();
        // Read afresh after a sweep (which may remove this key's own entry).
        let fits = |inner: &Inner| {
            let old = inner.entries.get(key).map_or(0, |entry| entry.bytes);
            let grows = !inner.entries.contains_key(key);
            (!grows || inner.entries.len() < self.max_entries)
                && inner.bytes.saturating_sub(old).saturating_add(bytes) <= self.max_bytes
        };
        // Expired entries make room first, swept at most once a second (a
        // store kept full by live entries is not walked on every write).
        if !fits(inner)
            && inner
                .swept
                .is_none_or(|at| now.duration_since(at) >= SWEEP_EVERY)
        {
            inner.swept = Some(now);
            inner
                .entries
                .retain(|_, entry| entry.expires.is_none_or(|at| at > now));
            inner.bytes = inner.entries.values().map(|entry| entry.bytes).sum();
        }
        if !fits(inner) {
            return Err(StoreError::Full);
        }
        let old = inner.entries.get(key).map_or(0, |entry| entry.bytes);
        inner.bytes = inner.bytes.saturating_sub(old).saturating_add(bytes);
        inner.entries.insert(
            key.to_owned(),
            Entry {
                value,
                expires,
                bytes,
            },
        );
        Ok(())
    }

    fn claim_now(&self, key: &str, lease: &Lease, ttl: Duration) -> Result<Claim, StoreError> {
        let now = Instant::now();
        let mut inner = self.lock();
        let fingerprint = lease.fingerprint();
        match Self::live(&mut inner, key, now).map(|entry| &entry.value) {
            Some(Value::Running(held)) if held == lease => Ok(Claim::Leader),
            Some(Value::Running(held)) if held.fingerprint() == fingerprint => Ok(Claim::Running),
            Some(Value::Settled {
                fingerprint: settled,
                record,
            }) if settled == fingerprint => Ok(Claim::Settled(record.clone())),
            Some(_) => Ok(Claim::Conflict),
            None => {
                let expires = now.checked_add(super::bounded(ttl));
                if let Some((quota, max)) = lease.quota() {
                    // Walked only when it looks full: expired members
                    // out, then its oldest found.
                    let mut freed = 0;
                    let (held, by_age) = match Self::live(&mut inner, quota, now) {
                        Some(Entry {
                            value: Value::Set(set),
                            bytes,
                            ..
                        }) if set.len() >= max => {
                            set.retain(|member, at| {
                                let keep = *at > now;
                                if !keep {
                                    freed += member.len() + 16;
                                }
                                keep
                            });
                            *bytes = bytes.saturating_sub(freed);
                            // The oldest first (usually a settled record:
                            // a running claim's lease outlasts the window);
                            // the rest by age only when it is running.
                            let oldest = set
                                .iter()
                                .min_by_key(|(_, at)| **at)
                                .map(|(member, at)| (*at, member.clone()));
                            (set.len(), oldest.into_iter().collect::<Vec<_>>())
                        }
                        Some(Entry {
                            value: Value::Set(set),
                            ..
                        }) => (set.len(), Vec::new()),
                        _ => (0, Vec::new()),
                    };
                    inner.bytes = inner.bytes.saturating_sub(freed);
                    if held >= max {
                        // Full: the party's oldest settled record (or one
                        // already gone) gives way; a running claim never
                        // does.
                        let gives_way = |inner: &mut Inner, member: &str| {
                            !matches!(
                                Self::live(inner, member, now).map(|e| &e.value),
                                Some(Value::Running(_))
                            )
                        };
                        let mut settled = by_age
                            .into_iter()
                            .map(|(_, member)| member)
                            .find(|member| gives_way(&mut inner, member));
                        if settled.is_none() {
                            let mut by_age: Vec<(Instant, String)> =
                                match inner.entries.get(quota).map(|entry| &entry.value) {
                                    Some(Value::Set(set)) => set
                                        .iter()
                                        .map(|(member, at)| (*at, member.clone()))
                                        .collect(),
                                    _ => Vec::new(),
                                };
                            by_age.sort_unstable();
                            settled = by_age
                                .into_iter()
                                .map(|(_, member)| member)
                                .find(|member| gives_way(&mut inner, member));
                        }
                        let Some(oldest) = settled else {
                            return Ok(Claim::Busy);
                        };
                        if let Some(entry) = inner.entries.remove(&oldest) {
                            inner.bytes = inner.bytes.saturating_sub(entry.bytes);
                        }
                        self.count(&mut inner, quota, &oldest, None, now)?;
                    }
                    self.count(&mut inner, quota, key, expires, now)?;
                }
                self.insert(
                    &mut inner,
                    key,
                    Value::Running(lease.clone()),
                    64,
                    expires,
                    now,
                )?;
                Ok(Claim::Leader)
            }
        }
    }

    /// Counts `member` in the set `quota` (a quota, an index) until
    /// `until` (`None`: takes it out), in place.
    fn count(
        &self,
        inner: &mut Inner,
        quota: &str,
        member: &str,
        until: Option<Instant>,
        now: Instant,
    ) -> Result<(), StoreError> {
        let cost = member.len() + 16;
        let room = self.max_bytes.saturating_sub(inner.bytes);
        let changed = match Self::live(inner, quota, now) {
            Some(Entry {
                value: Value::Set(set),
                bytes,
                expires,
            }) => match until {
                Some(until) => {
                    let new = !set.contains_key(member);
                    if new {
                        if cost > room {
                            return Err(StoreError::Full);
                        }
                        *bytes += cost;
                    }
                    set.insert(member.to_owned(), until);
                    *expires = (*expires).max(Some(until));
                    new.then(|| isize::try_from(cost).unwrap_or(0))
                }
                None => set.remove(member).map(|_| {
                    *bytes = bytes.saturating_sub(cost);
                    -isize::try_from(cost).unwrap_or(0)
                }),
            },
            Some(_) => return Err(StoreError::Protocol("not a set".to_owned())),
            None => {
                let Some(until) = until else {
                    return Ok(());
                };
                let set = HashMap::from([(member.to_owned(), until)]);
                return self.insert(inner, quota, Value::Set(set), cost, Some(until), now);
            }
        };
        // Counted apart from `insert`'s own (the set changed in place).
        match changed {
            Some(grew) if grew >= 0 => inner.bytes += grew.unsigned_abs(),
            Some(shrank) => inner.bytes = inner.bytes.saturating_sub(shrank.unsigned_abs()),
            None => {}
        }
        Ok(())
    }

    /// Wakes whoever waits on `key`.
    fn wake(inner: &Inner, key: &str) {
        if let Some(notify) = inner.waiters.get(key) {
            notify.notify_waiters();
        }
    }

    /// Puts `value` under `key` for `ttl` (only if `key` holds nothing,
    /// with `only_new`), and wakes its watchers; `false`: it held something.
    fn put_text(
        &self,
        key: &str,
        value: &str,
        ttl: Duration,
        only_new: bool,
    ) -> Result<bool, StoreError> {
        let now = Instant::now();
        let mut inner = self.lock();
        if only_new && Self::live(&mut inner, key, now).is_some() {
            return Ok(false);
        }
        let text = Value::Text(value.to_owned());
        let until = now.checked_add(super::bounded(ttl));
        self.insert(&mut inner, key, text, value.len(), until, now)?;
        Self::wake(&inner, key);
        Ok(true)
    }

    /// Registers interest in `key` (before its first check).
    fn interest<'s>(&'s self, key: &'s str) -> Interest<'s> {
        let mut inner = self.lock();
        let notify = Arc::clone(inner.waiters.entry(key.to_owned()).or_default());
        Interest {
            store: self,
            key,
            notify,
        }
    }

    fn text(&self, key: &str) -> Result<Option<String>, StoreError> {
        let now = Instant::now();
        let mut inner = self.lock();
        match Self::live(&mut inner, key, now).map(|entry| &entry.value) {
            Some(Value::Text(text)) => Ok(Some(text.clone())),
            Some(_) => Err(StoreError::Protocol("not a value".to_owned())),
            None => Ok(None),
        }
    }

    fn is_held_by(inner: &mut Inner, key: &str, lease: &Lease, now: Instant) -> bool {
        matches!(
            Self::live(inner, key, now).map(|entry| &entry.value),
            Some(Value::Running(held)) if held == lease
        )
    }
}

/// Takes a waiter's interest in a key back when the wait ends.
struct Interest<'s> {
    store: &'s MemoryStore,
    key: &'s str,
    notify: Arc<Notify>,
}

impl Drop for Interest<'_> {
    fn drop(&mut self) {
        let mut inner = self.store.lock();
        // The map's and this one: nobody else waits.
        if Arc::strong_count(&self.notify) <= 2 {
            inner.waiters.remove(self.key);
        }
    }
}

impl SharedStore for MemoryStore {
    fn name(&self) -> &str {
        "memory"
    }

    fn claim<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(async move { self.claim_now(key, lease, ttl) })
    }

    fn wait<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(async move {
            let interest = self.interest(key);
            loop {
                // Enabled before the check: a wake between the check and
                // the wait is not lost.
                let notified = interest.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                match self.claim_now(key, lease, ttl)? {
                    Claim::Running => {}
                    other => return Ok(other),
                }
                // A lease that runs out wakes nobody: look again then.
                let expires = self.lock().entries.get(key).and_then(|entry| entry.expires);
                match expires {
                    Some(at) => {
                        tokio::select! {
                            () = notified => {}
                            () = crate::util::time::sleep_until(at) => {}
                        }
                    }
                    None => notified.await,
                }
            }
        })
    }

    fn settle<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        record: &'a str,
        keep: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let now = Instant::now();
            let mut inner = self.lock();
            if !Self::is_held_by(&mut inner, key, lease, now) {
                return Ok(false);
            }
            let settled = Value::Settled {
                fingerprint: *lease.fingerprint(),
                record: record.to_owned(),
            };
            let until = now.checked_add(super::bounded(keep));
            self.insert(&mut inner, key, settled, record.len() + 32, until, now)?;
            if let Some((quota, _)) = lease.quota() {
                self.count(&mut inner, quota, key, until, now)?;
            }
            Self::wake(&inner, key);
            Ok(true)
        })
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let now = Instant::now();
            let mut inner = self.lock();
            if Self::is_held_by(&mut inner, key, lease, now)
                && let Some(entry) = inner.entries.remove(key)
            {
                inner.bytes = inner.bytes.saturating_sub(entry.bytes);
                if let Some((quota, _)) = lease.quota() {
                    self.count(&mut inner, quota, key, None, now)?;
                }
                Self::wake(&inner, key);
            }
            Ok(())
        })
    }

    fn take<'a>(
        &'a self,
        key: &'a str,
        limit: u32,
        window: Duration,
    ) -> BoxFuture<'a, Result<Taken, StoreError>> {
        Box::pin(async move {
            let now = Instant::now();
            let now_ms = crate::util::millis::millis(now - self.epoch);
            let window_ms = crate::util::millis::millis(window).max(1);
            #[allow(clippy::cast_precision_loss)]
            let per_ms = f64::from(limit) / window_ms as f64;
            let limit = f64::from(limit);
            let mut inner = self.lock();
            let (mut tokens, at_ms) = match Self::live(&mut inner, key, now).map(|e| &e.value) {
                Some(Value::Bucket { tokens, at_ms }) => (*tokens, *at_ms),
                Some(_) => return Err(StoreError::Protocol("not a bucket".to_owned())),
                None => (limit, now_ms),
            };
            #[allow(clippy::cast_precision_loss)]
            let refill = now_ms.saturating_sub(at_ms) as f64 * per_ms;
            tokens = (tokens + refill).min(limit);
            let taken = if tokens >= 1.0 {
                tokens -= 1.0;
                Taken::Allowed
            } else {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let wait = ((1.0 - tokens) / per_ms).ceil() as u64;
                Taken::Refused {
                    retry_after_ms: wait.max(1),
                }
            };
            let bucket = Value::Bucket {
                tokens,
                at_ms: now_ms.max(at_ms),
            };
            // Forgotten once full again (a full bucket is a fresh one).
            self.insert(
                &mut inner,
                key,
                bucket,
                16,
                now.checked_add(super::bounded(window)),
                now,
            )?;
            Ok(taken)
        })
    }

    fn append<'a>(
        &'a self,
        key: &'a str,
        record: &'a str,
        keep: usize,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let now = Instant::now();
            let mut inner = self.lock();
            let over = match inner.entries.get(key).map(|entry| &entry.value) {
                Some(Value::Log(log)) => (log.len() + 1).saturating_sub(keep),
                Some(_) => return Err(StoreError::Protocol("not a log".to_owned())),
                None => {
                    let log = VecDeque::from([record.to_owned()]);
                    return self.insert(&mut inner, key, Value::Log(log), record.len(), None, now);
                }
            };
            let max_bytes = self.max_bytes;
            let Inner { entries, bytes, .. } = &mut *inner;
            if let Some(Entry {
                value: Value::Log(log),
                bytes: own,
                ..
            }) = entries.get_mut(key)
            {
                let freed: usize = log.iter().take(over).map(String::len).sum();
                // Refused whole when it does not fit: the log keeps what it had.
                if (*bytes + record.len()).saturating_sub(freed) > max_bytes {
                    return Err(StoreError::Full);
                }
                log.drain(..over.min(log.len()));
                log.push_back(record.to_owned());
                *own = (*own + record.len()).saturating_sub(freed);
                *bytes = (*bytes + record.len()).saturating_sub(freed);
            }
            Ok(())
        })
    }

    fn records<'a>(
        &'a self,
        key: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let inner = self.lock();
            match inner.entries.get(key).map(|entry| &entry.value) {
                Some(Value::Log(log)) => Ok(log
                    .iter()
                    .skip(log.len().saturating_sub(count))
                    .cloned()
                    .collect()),
                Some(_) => Err(StoreError::Protocol("not a log".to_owned())),
                None => Ok(Vec::new()),
            }
        })
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.put_text(key, value, ttl, false).map(|_| ()) })
    }

    fn put_new<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { self.put_text(key, value, ttl, true) })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move { self.text(key) })
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut inner = self.lock();
            if let Some(entry) = inner.entries.remove(key) {
                inner.bytes = inner.bytes.saturating_sub(entry.bytes);
            }
            Self::wake(&inner, key);
            Ok(())
        })
    }

    fn watch<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(async move {
            let interest = self.interest(key);
            loop {
                let notified = interest.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if let Some(value) = self.text(key)? {
                    return Ok(value);
                }
                notified.await;
            }
        })
    }

    fn enroll<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let now = Instant::now();
            let until = now.checked_add(super::bounded(ttl)).unwrap_or(now);
            self.count(&mut self.lock(), key, member, Some(until), now)
        })
    }

    fn unenroll<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.count(&mut self.lock(), key, member, None, Instant::now()) })
    }

    fn members<'a>(
        &'a self,
        key: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let now = Instant::now();
            let mut inner = self.lock();
            match Self::live(&mut inner, key, now).map(|entry| &entry.value) {
                Some(Value::Set(set)) => Ok(set
                    .iter()
                    .filter(|(_, at)| **at > now)
                    .map(|(member, _)| member.clone())
                    .take(count)
                    .collect()),
                Some(_) => Err(StoreError::Protocol("not a set".to_owned())),
                None => Ok(Vec::new()),
            }
        })
    }
}
