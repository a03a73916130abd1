//! A bounded map with least-recently-used eviction and a time to live:
//! the shape of every cache and memory the registry keeps.

use std::borrow::Borrow;
use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use std::hash::Hash;

/// At most `capacity` entries; an entry older than `ttl_ms` (since it was
/// last written) is gone. Every operation is O(1) amortized.
#[derive(Debug)]
pub struct Lru<K, V> {
    /// Keys are bounded in number, so a fast non-keyed hash cannot be
    /// turned into more than `capacity` collisions.
    entries: FxHashMap<K, Entry<V>>,
    /// Keys in the order they were last touched, oldest first, each with
    /// the tick of that touch. A touch appends; the key's earlier slot
    /// stays behind, stale (its tick no longer matches the entry's), and
    /// is skipped when it reaches the front. Compacted whenever stale slots
    /// outnumber live entries, so it never holds more than about twice
    /// `capacity` slots.
    order: VecDeque<(u64, K)>,
    tick: u64,
    capacity: usize,
    ttl_ms: u64,
}

/// What [`Lru::lookup`] found.
#[derive(Debug)]
pub enum Lookup<'a, V> {
    /// No entry.
    Missing,
    /// An expired entry, now removed.
    Expired(V),
    /// A live entry, now the most recently used.
    Live(&'a mut V),
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    tick: u64,
    written_ms: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty map holding at most `capacity` entries, each for at most
    /// `ttl_ms` milliseconds after it was written.
    pub fn new(capacity: usize, ttl_ms: u64) -> Lru<K, V> {
        Lru {
            entries: FxHashMap::default(),
            order: VecDeque::new(),
            tick: 0,
            capacity: capacity.max(1),
            ttl_ms,
        }
    }

    fn expired(&self, entry: &Entry<V>, now_ms: u64) -> bool {
        now_ms.saturating_sub(entry.written_ms) >= self.ttl_ms
    }

    /// Drops the stale slots once they outnumber the live entries (plus a
    /// little slack), so the order never holds more than about twice the
    /// entries — nor keeps alive the keys of entries long removed. Every
    /// live entry keeps its current slot.
    fn compact(&mut self) {
        if self.order.len() >= self.entries.len().saturating_mul(2).saturating_add(16) {
            let entries = &self.entries;
            self.order
                .retain(|(tick, key)| entries.get(key).is_some_and(|entry| entry.tick == *tick));
        }
    }

    /// Records a touch of `key` at a new tick and returns the tick; the
    /// caller then gives the entry that tick.
    fn touch(&mut self, key: K) -> u64 {
        // Before the new slot goes in: the entry's current slot is kept.
        self.compact();
        self.tick += 1;
        self.order.push_back((self.tick, key));
        self.tick
    }

    /// The value, marking it recently used; expired entries are removed.
    pub fn get<Q>(&mut self, key: &Q, now_ms: u64) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (owned, entry) = self.entries.get_key_value(key)?;
        if self.expired(entry, now_ms) {
            self.remove(key);
            return None;
        }
        let owned = owned.clone();
        let tick = self.touch(owned);
        let entry = self.entries.get_mut(key)?;
        entry.tick = tick;
        Some(&mut entry.value)
    }

    /// The value, marking it recently used; an expired entry is removed
    /// and returned (one hash lookup when there is none).
    pub fn lookup<Q>(&mut self, key: &Q, now_ms: u64) -> Lookup<'_, V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let Some((owned, entry)) = self.entries.get_key_value(key) else {
            return Lookup::Missing;
        };
        if self.expired(entry, now_ms) {
            return match self.remove(key) {
                Some(value) => Lookup::Expired(value),
                None => Lookup::Missing,
            };
        }
        let owned = owned.clone();
        let tick = self.touch(owned);
        match self.entries.get_mut(key) {
            Some(entry) => {
                entry.tick = tick;
                Lookup::Live(&mut entry.value)
            }
            None => Lookup::Missing,
        }
    }

    /// The value without touching its recency (expired entries are `None`).
    pub fn peek<Q>(&self, key: &Q, now_ms: u64) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries
            .get(key)
            .filter(|entry| !self.expired(entry, now_ms))
            .map(|entry| &entry.value)
    }

    /// Inserts or replaces; beyond capacity, evicts the least recently used
    /// entry and returns it (the map never holds more than its capacity, so
    /// one insert evicts at most one).
    pub fn insert(&mut self, key: K, value: V, now_ms: u64) -> Option<(K, V)> {
        self.insert_replacing(key, value, now_ms).1
    }

    /// [`insert`](Self::insert), also returning the value `key` held
    /// before, if any.
    pub fn insert_replacing(
        &mut self,
        key: K,
        value: V,
        now_ms: u64,
    ) -> (Option<V>, Option<(K, V)>) {
        let tick = self.tick + 1;
        let replaced = match self.entries.entry(key.clone()) {
            std::collections::hash_map::Entry::Occupied(mut occupied) => {
                let entry = occupied.get_mut();
                entry.tick = tick;
                entry.written_ms = now_ms;
                Some(std::mem::replace(&mut entry.value, value))
            }
            std::collections::hash_map::Entry::Vacant(vacant) => {
                vacant.insert(Entry {
                    value,
                    tick,
                    written_ms: now_ms,
                });
                None
            }
        };
        // Counted before the touch so compaction sees the new entry.
        self.touch(key);
        let evicted = if self.entries.len() > self.capacity {
            self.pop_oldest()
        } else {
            None
        };
        (replaced, evicted)
    }

    /// Removes `key`, returning its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        // Its slot in `order` goes stale: skipped later, dropped by the
        // next compaction.
        let value = self.entries.remove(key).map(|entry| entry.value);
        self.compact();
        value
    }

    /// Removes every expired entry.
    #[cfg(test)]
    pub fn purge_expired(&mut self, now_ms: u64) {
        let expired: Vec<K> = self
            .entries
            .iter()
            .filter(|(_, entry)| self.expired(entry, now_ms))
            .map(|(key, _)| key.clone())
            .collect();
        for key in expired {
            self.remove(&key);
        }
    }

    /// An empty cache of the same capacity and time to live.
    pub fn empty_like<W>(&self) -> Lru<K, W> {
        Lru::new(self.capacity, self.ttl_ms)
    }

    /// How many entries it holds (expired ones included until purged).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The key of the least recently used entry whose value is `matching`,
    /// and how many entries match: O(n), for the small maps whose shares
    /// are counted.
    pub fn oldest_matching(&self, matching: impl Fn(&V) -> bool) -> (Option<K>, usize) {
        let mut count = 0;
        let mut oldest: Option<(u64, &K)> = None;
        for (key, entry) in &self.entries {
            if matching(&entry.value) {
                count += 1;
                if oldest.is_none_or(|(tick, _)| entry.tick < tick) {
                    oldest = Some((entry.tick, key));
                }
            }
        }
        (oldest.map(|(_, key)| key.clone()), count)
    }

    /// Removes and returns the least recently used entry.
    pub fn pop_oldest(&mut self) -> Option<(K, V)> {
        // One lookup for a live slot or one whose entry is gone; a stale
        // slot of a live entry (touched since) puts the entry back.
        while let Some((tick, key)) = self.order.pop_front() {
            if let Some((owned, entry)) = self.entries.remove_entry(&key) {
                if entry.tick == tick {
                    return Some((owned, entry.value));
                }
                self.entries.insert(owned, entry);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_and_expires() {
        let mut lru: Lru<String, u32> = Lru::new(2, 100);
        lru.insert("a".into(), 1, 0);
        lru.insert("b".into(), 2, 0);
        assert_eq!(lru.get("a", 10).copied(), Some(1)); // a is now most recent
        let evicted = lru.insert("c".into(), 3, 10);
        assert_eq!(evicted, Some(("b".to_owned(), 2)));
        assert_eq!(lru.peek("a", 50), Some(&1));
        assert_eq!(lru.get("a", 100), None, "expired at ttl");
        assert_eq!(lru.len(), 1);
        lru.purge_expired(1_000);
        assert_eq!(lru.len(), 0);
    }

    #[test]
    fn touches_and_removals_keep_the_order_bounded_and_right() {
        let mut lru: Lru<u32, u32> = Lru::new(3, u64::MAX);
        for round in 0..10_000u32 {
            lru.insert(round % 5, round, 0);
            let _ = lru.get(&(round % 3), 0);
            if round % 7 == 0 {
                lru.remove(&(round % 5));
            }
            assert!(lru.len() <= 3);
            assert!(lru.order.len() <= lru.entries.len() * 2 + 17);
            // Every live entry still has its slot.
            for (key, entry) in &lru.entries {
                assert!(lru.order.contains(&(entry.tick, *key)));
            }
        }
        let mut lru: Lru<u32, u32> = Lru::new(2, u64::MAX);
        lru.insert(1, 1, 0);
        lru.insert(2, 2, 0);
        lru.insert(1, 10, 0); // rewriting 1 makes 2 the oldest
        assert_eq!(lru.insert(3, 3, 0), Some((2, 2)));
        assert_eq!(lru.pop_oldest(), Some((1, 10)));
        assert_eq!(lru.pop_oldest(), Some((3, 3)));
        assert_eq!(lru.pop_oldest(), None);
    }
}
