//! The bucket table of the rate limiter: a map bounded in size that evicts
//! the least recently used entry, every operation O(1).
//!
//! Entries live in a slab threaded by a doubly linked recency list, most
//! recent first; the hash index maps a key to its slot. A full table reuses
//! the slot of the least recently used entry for the newcomer.

use std::hash::Hash;

use rustc_hash::FxHashMap;

const NIL: usize = usize::MAX;

#[derive(Debug)]
struct BucketNode<K, V> {
    key: K,
    value: V,
    /// Towards the most recent.
    prev: usize,
    /// Towards the least recent.
    next: usize,
}

/// At most `capacity` entries; inserting into a full table evicts the least
/// recently used one.
#[derive(Debug)]
pub(super) struct Buckets<K, V> {
    /// Keys are bounded in number, so a fast non-keyed hash cannot be
    /// turned into more than `capacity` collisions.
    index: FxHashMap<K, usize>,
    nodes: Vec<BucketNode<K, V>>,
    /// The most recently used slot.
    head: usize,
    /// The least recently used slot.
    tail: usize,
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V> Buckets<K, V> {
    pub(super) fn new(capacity: usize) -> Buckets<K, V> {
        Buckets {
            index: FxHashMap::default(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
            capacity: capacity.max(1),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.index.len()
    }

    /// The value of `key`, made most recently used; created by `make` when
    /// absent. A full table gives the newcomer the slot of its least
    /// recently used entry, which comes back as the second value (so the
    /// caller may remember what it owed). The value is `None` only if the
    /// table's links are broken, which no operation does.
    pub(super) fn entry(
        &mut self,
        key: K,
        make: impl FnOnce() -> V,
    ) -> (Option<&mut V>, Option<(K, V)>) {
        let mut evicted = None;
        let slot = match self.index.get(&key) {
            Some(&slot) => {
                self.unlink(slot);
                slot
            }
            None if self.nodes.len() < self.capacity => {
                self.nodes.push(BucketNode {
                    key: key.clone(),
                    value: make(),
                    prev: NIL,
                    next: NIL,
                });
                let slot = self.nodes.len() - 1;
                self.index.insert(key, slot);
                slot
            }
            None => {
                let slot = self.tail;
                self.unlink(slot);
                let Some(node) = self.nodes.get_mut(slot) else {
                    return (None, None);
                };
                let old_key = std::mem::replace(&mut node.key, key.clone());
                let old_value = std::mem::replace(&mut node.value, make());
                self.index.remove(&old_key);
                self.index.insert(key, slot);
                evicted = Some((old_key, old_value));
                slot
            }
        };
        self.push_front(slot);
        (
            self.nodes.get_mut(slot).map(|node| &mut node.value),
            evicted,
        )
    }

    /// Whether `key` has an entry (its recency unchanged).
    pub(super) fn get(&self, key: &K) -> Option<&V> {
        let slot = *self.index.get(key)?;
        self.nodes.get(slot).map(|node| &node.value)
    }

    /// Takes `slot` out of the recency list.
    fn unlink(&mut self, slot: usize) {
        let Some(node) = self.nodes.get(slot) else {
            return;
        };
        let (prev, next) = (node.prev, node.next);
        match self.nodes.get_mut(prev) {
            Some(before) => before.next = next,
            None => self.head = next,
        }
        match self.nodes.get_mut(next) {
            Some(after) => after.prev = prev,
            None => self.tail = prev,
        }
    }

    /// Puts `slot` first in the recency list.
    fn push_front(&mut self, slot: usize) {
        let old_head = self.head;
        if let Some(node) = self.nodes.get_mut(slot) {
            node.prev = NIL;
            node.next = old_head;
        }
        match self.nodes.get_mut(old_head) {
            Some(head) => head.prev = slot,
            None => self.tail = slot,
        }
        self.head = slot;
    }

    /// Keys from most to least recently used.
    #[cfg(test)]
    fn keys_by_recency(&self) -> Vec<K> {
        let mut keys = Vec::new();
        let mut slot = self.head;
        while let Some(node) = self.nodes.get(slot) {
            keys.push(node.key.clone());
            slot = node.next;
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(buckets: &mut Buckets<u32, u32>, key: u32, make: u32) -> (Option<u32>, Option<u32>) {
        let (value, evicted) = buckets.entry(key, || make);
        (value.copied(), evicted.map(|(k, _)| k))
    }

    #[test]
    fn looks_up_before_it_evicts_and_evicts_the_least_recently_used() {
        let mut buckets: Buckets<u32, u32> = Buckets::new(3);
        for key in 1..=3 {
            get(&mut buckets, key, key);
        }
        // A hit on a full table evicts nothing.
        assert_eq!(get(&mut buckets, 1, 100), (Some(1), None));
        assert_eq!(buckets.keys_by_recency(), [1, 3, 2]);
        // A miss evicts 2, the least recently used, and says so.
        assert_eq!(get(&mut buckets, 4, 40), (Some(40), Some(2)));
        assert_eq!(buckets.keys_by_recency(), [4, 1, 3]);
        assert_eq!(buckets.len(), 3);
        assert_eq!(
            get(&mut buckets, 2, 20),
            (Some(20), Some(3)),
            "2 starts afresh"
        );
        assert_eq!(buckets.keys_by_recency(), [2, 4, 1]);
        assert_eq!(get(&mut buckets, 1, 100), (Some(1), None), "1 survived");
    }

    #[test]
    fn a_single_slot_table_keeps_the_last_key() {
        let mut buckets: Buckets<u32, u32> = Buckets::new(1);
        assert_eq!(get(&mut buckets, 1, 1), (Some(1), None));
        assert_eq!(get(&mut buckets, 2, 2), (Some(2), Some(1)));
        assert_eq!(get(&mut buckets, 2, 9), (Some(2), None));
        assert_eq!(buckets.keys_by_recency(), [2]);
    }
}
