//! Platform ways: the sets of platform conditions under which a crate or a
//! file is reached, each way its own conjunction, kept apart so the gate
//! tells every platform a declaration lives on, never only the first way
//! it found. Ways are walked shortest first, then in the order of their
//! conditions ([`Queue`]): a way only gains conditions along a path, so a
//! way found later seldom covers one kept before it, and which ways are
//! told apart does not depend on the order of the declarations. Each crate
//! or file is walked at most `MAX_WAYS + 1` times whatever its ways.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

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
    fn new(mut shown: Vec<String>) -> Way {
        let mut seen = BTreeSet::new();
        shown.retain(|condition| seen.insert(condition.clone()));
        let set = seen.into_iter().collect();
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
    /// Ways taken to walk on (each a walk of the crate or file).
    taken: usize,
    /// The distinct ways beyond [`MAX_WAYS`], by digest: how many and
    /// which are told, so a change among them still changes what review
    /// sees.
    beyond: BTreeSet<[u8; 32]>,
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
    /// a subset); drops the kept ways it covers. Once [`MAX_WAYS`] were
    /// taken, it is recorded and told as [`OTHER_WAYS`]. Returns the way to
    /// walk on with, `None` when it adds no platform.
    pub(crate) fn add(&mut self, way: Vec<String>) -> Option<Vec<String>> {
        let way = Way::new(way);
        if self.kept.iter().any(|kept| kept.covers(&way)) {
            return None;
        }
        if way.set.is_empty() || self.taken < MAX_WAYS {
            self.kept.retain(|kept| !way.covers(kept));
            self.taken += 1;
            let shown = way.shown.clone();
            self.kept.push(way);
            return Some(shown);
        }
        self.beyond.insert(digest(&way.set));
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
        use sha2::Digest as _;
        let everywhere = self.kept.iter().any(|way| way.set.is_empty());
        if self.beyond.is_empty() || everywhere {
            return None;
        }
        let mut hasher = sha2::Sha256::new();
        for way in &self.beyond {
            hasher.update(way);
        }
        let digest = crate::source_attrs::hex(&hasher.finalize());
        Some(format!(
            "{OTHER_WAYS} ({} more, digest {digest})",
            self.beyond.len()
        ))
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

/// A way's digest (SHA-256 of its conditions as a set): the same in every
/// run and with every toolchain, or an unchanged source would show as
/// changed.
fn digest(set: &[String]) -> [u8; 32] {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    for condition in set {
        hasher.update(condition.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize().into()
}

/// What is still to walk: the way with the fewest distinct conditions
/// first, then by its conditions in order, then in the order found.
pub(crate) struct Queue<T> {
    heap: BinaryHeap<Queued<T>>,
    next: u64,
}

/// A queued walk, ordered by (fewest conditions, its conditions, order
/// found), smallest first.
type Queued<T> = (Reverse<usize>, Reverse<Vec<String>>, Reverse<u64>, Entry<T>);

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
        let Way { shown, set } = Way::new(way);
        self.heap.push((
            Reverse(set.len()),
            Reverse(set),
            Reverse(self.next),
            Entry(item, shown),
        ));
    }

    pub(crate) fn pop(&mut self) -> Option<(T, Vec<String>)> {
        self.heap
            .pop()
            .map(|(_, _, _, Entry(item, way))| (item, way))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn way(conditions: &[&str]) -> Vec<String> {
        conditions.iter().map(|c| (*c).to_owned()).collect()
    }

    #[test]
    fn walks_are_bounded_however_the_ways_come_and_everywhere_covers_all() {
        let mut ways = Ways::default();
        // Ever wider ways, each covering the one before: each would walk
        // the file again, up to the limit.
        let mut walks = 0;
        for i in (0..100).rev() {
            let mut conditions: Vec<String> = (0..i).map(|c| format!("c{c}")).collect();
            conditions.push("unix".to_owned());
            if ways.add(conditions).is_some() {
                walks += 1;
            }
        }
        assert!(walks <= MAX_WAYS + 1, "{walks} walks");
        assert!(ways.each().iter().any(|w| w[0].starts_with(OTHER_WAYS)));
        // A way on every platform is always taken, and covers everything.
        assert_eq!(ways.add(Vec::new()), Some(Vec::new()));
        assert_eq!(ways.each(), [Vec::<String>::new()]);
        assert!(ways.condition().is_empty());
        assert_eq!(ways.beyond_told(), None);
    }

    #[test]
    fn a_way_seen_twice_beyond_the_limit_counts_once() {
        let mut once = Ways::default();
        let mut twice = Ways::default();
        for i in 0..=MAX_WAYS {
            once.add(way(&[&format!("c{i}")]));
            twice.add(way(&[&format!("c{i}")]));
        }
        twice.add(way(&[&format!("c{MAX_WAYS}")]));
        assert_eq!(once.condition(), twice.condition());
        assert!(once.condition()[0].contains("(1 more, digest "));
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
