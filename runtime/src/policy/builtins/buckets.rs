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
struct Node<K, V> {
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
    nodes: Vec<Node<K, V>>,
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
    /// absent. A full table evicts its least recently used entry only if
    /// `busy` says it may (`None`); otherwise nothing changes and `busy`'s
    /// answer comes back as `Err` (how long until it may). `Ok(None)` only
    /// if the table's links are broken, which no operation does.
    pub(super) fn entry(
        &mut self,
        key: K,
        make: impl FnOnce() -> V,
        busy: impl FnOnce(&V) -> Option<u64>,
    ) -> Result<Option<&mut V>, u64> {
        let slot = match self.index.get(&key) {
            Some(&slot) => {
                self.unlink(slot);
                slot
            }
            None if self.nodes.len() < self.capacity => {
                self.nodes.push(Node {
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
                if let Some(wait) = self.nodes.get(slot).and_then(|node| busy(&node.value)) {
                    return Err(wait);
                }
                self.unlink(slot);
                let Some(node) = self.nodes.get_mut(slot) else {
                    return Ok(None);
                };
                let evicted = std::mem::replace(&mut node.key, key.clone());
                node.value = make();
                self.index.remove(&evicted);
                self.index.insert(key, slot);
                slot
            }
        };
        self.push_front(slot);
        Ok(self.nodes.get_mut(slot).map(|node| &mut node.value))
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

    #[test]
    fn looks_up_before_it_evicts_and_evicts_the_least_recently_used() {
        let mut buckets: Buckets<u32, u32> = Buckets::new(3);
        for key in 1..=3 {
            buckets.entry(key, || key, |_| None).ok().flatten();
        }
        // A hit on a full table evicts nothing.
        assert_eq!(
            buckets.entry(1, || 100, |_| None).ok().flatten().copied(),
            Some(1)
        );
        assert_eq!(buckets.keys_by_recency(), [1, 3, 2]);
        // A miss evicts 2, the least recently used.
        assert_eq!(
            buckets.entry(4, || 40, |_| None).ok().flatten().copied(),
            Some(40)
        );
        assert_eq!(buckets.keys_by_recency(), [4, 1, 3]);
        assert_eq!(buckets.len(), 3);
        assert_eq!(
            buckets.entry(2, || 20, |_| None).ok().flatten().copied(),
            Some(20),
            "2 starts afresh"
        );
        assert_eq!(buckets.keys_by_recency(), [2, 4, 1]);
        assert_eq!(
            buckets.entry(1, || 100, |_| None).ok().flatten().copied(),
            Some(1),
            "1 survived"
        );
    }

    #[test]
    fn a_busy_least_recently_used_entry_is_not_evicted() {
        let mut buckets: Buckets<u32, u32> = Buckets::new(1);
        assert_eq!(
            buckets.entry(1, || 1, |_| None).ok().flatten().copied(),
            Some(1)
        );
        assert_eq!(buckets.entry(2, || 2, |_| Some(500)).err(), Some(500));
        assert_eq!(
            buckets
                .entry(1, || 9, |_| Some(500))
                .ok()
                .flatten()
                .copied(),
            Some(1)
        );
    }

    #[test]
    fn a_single_slot_table_keeps_the_last_key() {
        let mut buckets: Buckets<u32, u32> = Buckets::new(1);
        assert_eq!(
            buckets.entry(1, || 1, |_| None).ok().flatten().copied(),
            Some(1)
        );
        assert_eq!(
            buckets.entry(2, || 2, |_| None).ok().flatten().copied(),
            Some(2)
        );
        assert_eq!(
            buckets.entry(2, || 9, |_| None).ok().flatten().copied(),
            Some(2)
        );
        assert_eq!(buckets.keys_by_recency(), [2]);
    }
}
