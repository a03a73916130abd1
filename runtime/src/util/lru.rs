//! A bounded map with least-recently-used eviction and a time to live:
//! the shape of every cache and memory the registry keeps.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::hash::Hash;

/// At most `capacity` entries; an entry older than `ttl_ms` (since it was
/// last written) is gone. Operations are O(log n).
#[derive(Debug)]
pub(crate) struct Lru<K, V> {
    /// Keys are bounded in number, so a fast non-keyed hash cannot be
    /// turned into more than `capacity` collisions.
    entries: FxHashMap<K, Entry<V>>,
    order: BTreeMap<u64, K>,
    tick: u64,
    capacity: usize,
    ttl_ms: u64,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    tick: u64,
    written_ms: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    pub(crate) fn new(capacity: usize, ttl_ms: u64) -> Lru<K, V> {
        Lru {
            entries: FxHashMap::default(),
            order: BTreeMap::new(),
            tick: 0,
            capacity: capacity.max(1),
            ttl_ms,
        }
    }

    fn expired(&self, entry: &Entry<V>, now_ms: u64) -> bool {
        now_ms.saturating_sub(entry.written_ms) >= self.ttl_ms
    }

    /// The value, marking it recently used; expired entries are removed.
    pub(crate) fn get<Q>(&mut self, key: &Q, now_ms: u64) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let expired = self
            .entries
            .get(key)
            .map(|entry| self.expired(entry, now_ms))?;
        if expired {
            self.remove(key);
            return None;
        }
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.get_mut(key)?;
        if let Some(owner) = self.order.remove(&entry.tick) {
            self.order.insert(tick, owner);
        }
        entry.tick = tick;
        Some(&mut entry.value)
    }

    /// The value without touching its recency (expired entries are `None`).
    pub(crate) fn peek<Q>(&self, key: &Q, now_ms: u64) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries
            .get(key)
            .filter(|entry| !self.expired(entry, now_ms))
            .map(|entry| &entry.value)
    }

    /// Inserts or replaces, evicting the least recently used entries beyond
    /// capacity. Returns the evicted values.
    pub(crate) fn insert(&mut self, key: K, value: V, now_ms: u64) -> Vec<(K, V)> {
        self.tick += 1;
        if let Some(entry) = self.entries.get_mut(&key) {
            if let Some(owner) = self.order.remove(&entry.tick) {
                self.order.insert(self.tick, owner);
            }
            entry.value = value;
            entry.tick = self.tick;
            entry.written_ms = now_ms;
            return Vec::new();
        }
        self.order.insert(self.tick, key.clone());
        self.entries.insert(
            key,
            Entry {
                value,
                tick: self.tick,
                written_ms: now_ms,
            },
        );
        let mut evicted = Vec::new();
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some(entry) = self.entries.remove(&oldest) {
                evicted.push((oldest, entry.value));
            }
        }
        evicted
    }

    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entry = self.entries.remove(key)?;
        self.order.remove(&entry.tick);
        Some(entry.value)
    }

    /// Removes every expired entry.
    #[cfg(test)]
    pub(crate) fn purge_expired(&mut self, now_ms: u64) {
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

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Removes and returns the least recently used entry.
    pub(crate) fn pop_oldest(&mut self) -> Option<(K, V)> {
        let (_, oldest) = self.order.pop_first()?;
        let entry = self.entries.remove(&oldest)?;
        Some((oldest, entry.value))
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
        assert_eq!(evicted, [("b".to_owned(), 2)]);
        assert_eq!(lru.peek("a", 50), Some(&1));
        assert_eq!(lru.get("a", 100), None, "expired at ttl");
        assert_eq!(lru.len(), 1);
        lru.purge_expired(1_000);
        assert_eq!(lru.len(), 0);
    }
}
