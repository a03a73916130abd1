//! Platform ways: the sets of platform conditions under which a crate or a
//! file is reached, each way its own conjunction, kept apart so the gate
//! tells every platform a declaration lives on, never only the first way
//! it found. Ways are walked shortest first ([`Queue`]): a way only gains
//! conditions along a path, so a way found later never covers one kept
//! before it, and each crate or file is walked at most `MAX_WAYS + 1`
//! times however its ways are arranged.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// At most this many platform ways to one crate or file are told apart; a
/// way beyond them is told as [`OTHER_WAYS`]. What it reaches stays
/// conditional either way: it is never taken as built on every platform.
pub(crate) const MAX_WAYS: usize = 8;

/// How ways beyond [`MAX_WAYS`] are told.
pub(crate) const OTHER_WAYS: &str = "other platform conditions";

/// One way: its conditions as found (shown in that order) and as a sorted
/// set (compared).
struct Way {
    shown: Vec<String>,
    set: Vec<String>,
}

impl Way {
    fn new(shown: Vec<String>) -> Way {
        let mut set = shown.clone();
        set.sort();
        set.dedup();
        Way { shown, set }
    }

    /// Whether every condition of `self` is one of `other`'s: wherever
    /// `other` holds, `self` does, so `other` adds no platform.
    fn covers(&self, other: &Way) -> bool {
        let mut theirs = other.set.iter();
        self.set
            .iter()
            .all(|mine| theirs.by_ref().any(|their| their == mine))
    }
}

/// The platform ways to one crate or file: each the conditions that all
/// hold on one way to it (an empty way: on every platform). No way holds
/// another's conditions and more (it would add no platform).
#[derive(Default)]
pub(crate) struct Ways {
    kept: Vec<Way>,
    /// Ways beyond [`MAX_WAYS`]: how many, and a digest of them, so a
    /// change among them still changes what review sees.
    beyond: u64,
    beyond_digest: u64,
}

impl Ways {
    /// The ways of the walk's starting point: on every platform.
    pub(crate) fn everywhere() -> Ways {
        Ways {
            kept: vec![Way::new(Vec::new())],
            ..Ways::default()
        }
    }

    /// Adds `way` unless a kept way already covers it (its conditions are
    /// a subset); drops the kept ways it covers. Beyond [`MAX_WAYS`] it is
    /// counted and told as [`OTHER_WAYS`]. Returns the way to walk on
    /// with, `None` when it adds no platform.
    pub(crate) fn add(&mut self, way: Vec<String>) -> Option<Vec<String>> {
        let way = Way::new(way);
        if self.kept.iter().any(|kept| kept.covers(&way)) {
            return None;
        }
        self.kept.retain(|kept| !way.covers(kept));
        if self.kept.len() < MAX_WAYS {
            let shown = way.shown.clone();
            self.kept.push(way);
            return Some(shown);
        }
        self.beyond = self.beyond.saturating_add(1);
        self.beyond_digest = self.beyond_digest.wrapping_add(digest(&way.set));
        let marker = Way::new(vec![OTHER_WAYS.to_owned()]);
        if self.kept.iter().any(|kept| kept.covers(&marker)) {
            return None;
        }
        self.kept.push(marker);
        Some(vec![OTHER_WAYS.to_owned()])
    }

    /// Each kept way, as found; its own marker way (not one inherited
    /// from the way in) told with how many ways it stands for and their
    /// digest.
    pub(crate) fn each(&self) -> Vec<Vec<String>> {
        self.kept
            .iter()
            .map(|way| match (way.shown.as_slice(), self.beyond_told()) {
                ([only], Some(told)) if only == OTHER_WAYS => vec![told],
                (shown, _) => shown.to_vec(),
            })
            .collect()
    }

    /// How the ways beyond [`MAX_WAYS`] are told (`None`: there are none,
    /// or a way on every platform covers them).
    pub(crate) fn beyond_told(&self) -> Option<String> {
        let everywhere = self.kept.iter().any(|way| way.set.is_empty());
        (self.beyond > 0 && !everywhere).then(|| {
            format!(
                "{OTHER_WAYS} ({} more, digest {:016x})",
                self.beyond, self.beyond_digest
            )
        })
    }

    /// The condition as one conjunction: empty when some way is
    /// unconditional, else the one way, else `any(…)` of every way.
    pub(crate) fn condition(&self) -> Vec<String> {
        let each = self.each();
        match each.as_slice() {
            [] => Vec::new(),
            ways if ways.iter().any(Vec::is_empty) => Vec::new(),
            [one] => one.clone(),
            many => {
                let mut told: Vec<String> = many
                    .iter()
                    .map(|way| crate::source_attrs::joined(way))
                    .collect();
                told.sort();
                vec![format!("any({})", told.join(", "))]
            }
        }
    }
}

/// A way's digest: the same in every run and with every toolchain, or an
/// unchanged source would show as changed.
fn digest(set: &[String]) -> u64 {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    for condition in set {
        hasher.update(condition.as_bytes());
        hasher.update([0]);
    }
    let sum = hasher.finalize();
    let mut first = [0u8; 8];
    for (to, from) in first.iter_mut().zip(sum.iter()) {
        *to = *from;
    }
    u64::from_le_bytes(first)
}

/// What is still to walk, shortest way first (then in the order found).
pub(crate) struct Queue<T> {
    heap: BinaryHeap<(Reverse<usize>, Reverse<u64>, Entry<T>)>,
    next: u64,
}

/// A queued item; never compared (the sequence number decides ties).
struct Entry<T>(T, Vec<String>);

impl<T> PartialEq for Entry<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<T> Queue<T> {
    pub(crate) fn new() -> Queue<T> {
        Queue {
            heap: BinaryHeap::new(),
            next: 0,
        }
    }

    pub(crate) fn push(&mut self, item: T, way: Vec<String>) {
        self.next += 1;
        self.heap
            .push((Reverse(way.len()), Reverse(self.next), Entry(item, way)));
    }

    pub(crate) fn pop(&mut self) -> Option<(T, Vec<String>)> {
        self.heap.pop().map(|(_, _, Entry(item, way))| (item, way))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn way(conditions: &[&str]) -> Vec<String> {
        conditions.iter().map(|c| (*c).to_owned()).collect()
    }

    #[test]
    fn a_wider_way_replaces_narrower_ones_even_past_the_limit() {
        let mut ways = Ways::default();
        for i in 0..MAX_WAYS + 3 {
            assert!(ways.add(way(&["unix", &format!("c{i}")])).is_some() || i > MAX_WAYS);
        }
        assert!(ways.each().iter().any(|w| w[0].starts_with(OTHER_WAYS)));
        // `unix` covers every way told apart; those beyond it stand for are
        // no longer known, so they stay told (wider than the truth, never
        // narrower).
        assert_eq!(ways.add(way(&["unix"])), Some(way(&["unix"])));
        let each = ways.each();
        assert_eq!(each.len(), 2, "{each:?}");
        assert!(each.contains(&way(&["unix"])));
        // A way on every platform covers everything.
        assert_eq!(ways.add(Vec::new()), Some(Vec::new()));
        assert_eq!(ways.each(), [Vec::<String>::new()]);
        assert!(ways.condition().is_empty());
        assert_eq!(ways.beyond_told(), None);
    }

    #[test]
    fn ways_beyond_the_limit_are_counted_and_digested() {
        let mut first = Ways::default();
        let mut second = Ways::default();
        for i in 0..MAX_WAYS + 2 {
            first.add(way(&[&format!("c{i}")]));
            second.add(way(&[&format!("c{i}")]));
        }
        assert_eq!(first.condition(), second.condition());
        second.add(way(&["macos"]));
        assert_ne!(first.condition(), second.condition(), "one more way shows");
        assert!(second.condition()[0].contains("3 more"));
    }

    #[test]
    fn the_queue_walks_the_shortest_way_first_then_in_order() {
        let mut queue = Queue::new();
        queue.push("long", way(&["a", "b"]));
        queue.push("first", way(&["a"]));
        queue.push("second", way(&["b"]));
        queue.push("none", Vec::new());
        let order: Vec<&str> = std::iter::from_fn(|| queue.pop().map(|(item, _)| item)).collect();
        assert_eq!(order, ["none", "first", "second", "long"]);
    }
}
