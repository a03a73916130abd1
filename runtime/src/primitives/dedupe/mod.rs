//! Phase 1: deduplication and conflict detection.
//!
//! The key is the pair `(consumerKey, invocationId)`, scoped to the
//! registry — a structured key, so no two consumers' ids can collide
//! however they are spelled. A retry with the same key and the same request
//! fingerprint joins the in-flight execution or returns the cached terminal
//! result verbatim; the same key with a different fingerprint fails closed
//! with `INVOCATION_CONFLICT`.
//!
//! Two memories, bounded differently:
//! - **in flight**: one record per running call. Never evicted (evicting
//!   one would let a retry run the handler twice); bounded per consumer by
//!   `max_in_flight_per_consumer` (more settle `RATE_LIMITED`).
//! - **settled**: terminal results, per consumer, with a time to live and a
//!   shared budget in count (`dedupe_cache_size`) and bytes
//!   (`dedupe_cache_bytes`). When the budget is exceeded the consumer
//!   holding the most bytes gives up its oldest record: a consumer within
//!   its fair share is never evicted by another consumer's traffic.
//!
//! `CONFIRMATION_REQUIRED`, `RATE_LIMITED` and `INVOCATION_CONFLICT` are
//! never kept.

mod orphans;

use std::sync::Arc;

use rustc_hash::FxHashMap;
use tokio::sync::watch;

use crate::invocation::InvocationResult;
use crate::util::lru::Lru;

/// The structured dedupe key: `(consumer key, invocation id)`.
pub(crate) type Key = (Arc<str>, Arc<str>);

struct InFlight {
    fingerprint: u64,
    generation: u64,
    /// Created by the first joiner; the leader reports through it.
    done: Option<watch::Sender<Option<InvocationResult>>>,
}

/// An in-flight record whose consumer was forgotten.
struct Orphan {
    consumer: Arc<str>,
    done: Option<watch::Sender<Option<InvocationResult>>>,
}

struct Settled {
    fingerprint: u64,
    result: InvocationResult,
    /// What this record costs the byte budget.
    bytes: usize,
}

/// One consumer's settled records.
struct Ledger {
    records: Lru<Arc<str>, Settled>,
    bytes: usize,
}

/// What phase 1 decided.
pub(crate) enum Begin {
    /// A new attempt (its generation): run the pipeline, then `finish`.
    Leader(u64),
    /// The same request is running: wait for its result.
    Join(watch::Receiver<Option<InvocationResult>>),
    /// The same request already settled: its result, verbatim.
    Cached(InvocationResult),
    /// The key was used for a different request.
    Conflict,
    /// The consumer has too many calls in flight.
    Busy,
}

/// The budgets of one registry's dedupe window.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WindowLimits {
    /// Settled records, all consumers together.
    pub(crate) count: usize,
    /// Bytes of settled records, all consumers together.
    pub(crate) bytes: usize,
    /// How long a settled record is remembered.
    pub(crate) ttl_ms: u64,
    /// In-flight records per consumer.
    pub(crate) in_flight_per_consumer: usize,
}

/// The dedupe window of one registry.
pub(crate) struct Dedupe {
    in_flight: FxHashMap<Key, InFlight>,
    /// In-flight records of forgotten consumers, by generation: their
    /// results reach their joiners but are never kept (the identity's ids
    /// mean nothing any more). They still count against the consumer's
    /// in-flight bound until they settle.
    orphaned: FxHashMap<u64, Orphan>,
    in_flight_per_consumer: FxHashMap<Arc<str>, usize>,
    settled: FxHashMap<Arc<str>, Ledger>,
    settled_count: usize,
    settled_bytes: usize,
    generation: u64,
    budget: WindowLimits,
}

/// Fixed cost of a settled record beyond its serialized result: the key,
/// the map entries and the bookkeeping.
const RECORD_OVERHEAD: usize = 160;

impl Dedupe {
    pub(crate) fn new(budget: WindowLimits) -> Dedupe {
        Dedupe {
            in_flight: FxHashMap::default(),
            orphaned: FxHashMap::default(),
            in_flight_per_consumer: FxHashMap::default(),
            settled: FxHashMap::default(),
            settled_count: 0,
            settled_bytes: 0,
            generation: 0,
            budget,
        }
    }

    pub(crate) fn begin(&mut self, key: &Key, fingerprint: u64, now_ms: u64) -> Begin {
        if let Some(record) = self.in_flight.get_mut(key) {
            if record.fingerprint != fingerprint {
                return Begin::Conflict;
            }
            let sender = record.done.get_or_insert_with(|| watch::channel(None).0);
            return Begin::Join(sender.subscribe());
        }
        if let Some(found) = self.settled_lookup(key, fingerprint, now_ms) {
            return found;
        }
        let running = self
            .in_flight_per_consumer
            .get(&key.0)
            .copied()
            .unwrap_or(0);
        if running >= self.budget.in_flight_per_consumer {
            return Begin::Busy;
        }
        self.generation += 1;
        self.in_flight.insert(
            key.clone(),
            InFlight {
                fingerprint,
                generation: self.generation,
                done: None,
            },
        );
        *self
            .in_flight_per_consumer
            .entry(Arc::clone(&key.0))
            .or_insert(0) += 1;
        Begin::Leader(self.generation)
    }

    /// A settled record for `key`: cached, conflicting, or none (an expired
    /// one is forgotten here).
    fn settled_lookup(&mut self, key: &Key, fingerprint: u64, now_ms: u64) -> Option<Begin> {
        let ledger = self.settled.get_mut(&key.0)?;
        let found = match ledger.records.peek(&*key.1, now_ms) {
            Some(record) if record.fingerprint != fingerprint => Some(Begin::Conflict),
            Some(record) => Some(Begin::Cached(record.result.clone())),
            None => None,
        };
        if found.is_some() {
            // Touch: recently used records are evicted last.
            let _ = ledger.records.get(&*key.1, now_ms);
        } else if let Some(expired) = ledger.records.remove(&*key.1) {
            self.forget(&key.0, expired.bytes);
        }
        found
    }

    /// Records the leader's result (kept when terminal, forgotten
    /// otherwise) and hands it to joiners.
    pub(crate) fn finish(
        &mut self,
        key: &Key,
        generation: u64,
        result: &InvocationResult,
        output_bytes: Option<usize>,
        now_ms: u64,
    ) {
        let Some(record) = self.take_in_flight(key, generation) else {
            if let Some(orphan) = self.take_orphan(generation)
                && let Some(done) = orphan.done
            {
                done.send_replace(Some(result.clone()));
            }
            return;
        };
        if let Some(done) = record.done {
            done.send_replace(Some(result.clone()));
        }
        if result
            .error()
            .is_some_and(|error| !error.code().cacheable())
        {
            return;
        }
        // A successful result costs its output, which phase 10 already
        // measured; anything else (an error payload, small) is counted here.
        let payload = match (result.is_ok(), output_bytes) {
            (true, Some(bytes)) => bytes,
            (true, None) if result.output().is_none() => 0,
            _ => serialized_len(result),
        };
        let bytes = RECORD_OVERHEAD + key.1.len() + result.capability_id().len() + payload;
        if bytes > self.budget.bytes {
            // Larger than the whole window: kept by nobody.
            return;
        }
        if let Some(old) = self
            .settled
            .get_mut(&key.0)
            .and_then(|ledger| ledger.records.remove(&*key.1))
        {
            self.forget(&key.0, old.bytes);
        }
        let capacity = self.budget.count;
        let ttl_ms = self.budget.ttl_ms;
        let ledger = self
            .settled
            .entry(Arc::clone(&key.0))
            .or_insert_with(|| Ledger {
                // Never evicts by itself: the shared budget decides.
                records: Lru::new(capacity.saturating_add(1), ttl_ms),
                bytes: 0,
            });
        let evicted = ledger.records.insert(
            Arc::clone(&key.1),
            Settled {
                fingerprint: record.fingerprint,
                result: result.clone(),
                bytes,
            },
            now_ms,
        );
        ledger.bytes += bytes;
        self.settled_count += 1;
        self.settled_bytes += bytes;
        if let Some((_, evicted)) = evicted {
            self.forget(&key.0, evicted.bytes);
        }
        self.enforce_budget();
    }

    /// The leader went away without a result: forget the attempt.
    pub(crate) fn abandon(&mut self, key: &Key, generation: u64) {
        if self.take_in_flight(key, generation).is_none() {
            let _ = self.take_orphan(generation);
        }
    }

    /// Ends an orphaned attempt (its consumer was forgotten while it ran).
    fn take_orphan(&mut self, generation: u64) -> Option<Orphan> {
        let orphan = self.orphaned.remove(&generation)?;
        self.release_slot(&orphan.consumer);
        Some(orphan)
    }

    /// One fewer call of `consumer` in flight.
    fn release_slot(&mut self, consumer: &str) {
        if let Some(running) = self.in_flight_per_consumer.get_mut(consumer) {
            *running = running.saturating_sub(1);
            if *running == 0 {
                self.in_flight_per_consumer.remove(consumer);
            }
        }
    }

    fn take_in_flight(&mut self, key: &Key, generation: u64) -> Option<InFlight> {
        if self.in_flight.get(key)?.generation != generation {
            return None;
        }
        let record = self.in_flight.remove(key)?;
        self.release_slot(&key.0);
        Some(record)
    }

    /// Accounts for a settled record of `consumer` that was removed.
    fn forget(&mut self, consumer: &str, bytes: usize) {
        self.settled_count = self.settled_count.saturating_sub(1);
        self.settled_bytes = self.settled_bytes.saturating_sub(bytes);
        if let Some(ledger) = self.settled.get_mut(consumer) {
            ledger.bytes = ledger.bytes.saturating_sub(bytes);
            if ledger.records.is_empty() {
                self.settled.remove(consumer);
            }
        }
    }

    /// Over budget: the consumer holding the most of what overflowed (records
    /// when the count did, bytes when the bytes did) gives up its oldest
    /// record, until the window fits. A consumer within its fair share of
    /// both is never the one chosen. Consumers holding records are at most
    /// `count`.
    fn enforce_budget(&mut self) {
        loop {
            let by_count = self.settled_count > self.budget.count;
            if !by_count && self.settled_bytes <= self.budget.bytes {
                return;
            }
            let Some(heaviest) = self
                .settled
                .iter()
                .max_by_key(|(_, ledger)| {
                    if by_count {
                        (ledger.records.len(), ledger.bytes)
                    } else {
                        (ledger.bytes, ledger.records.len())
                    }
                })
                .map(|(consumer, _)| Arc::clone(consumer))
            else {
                self.settled_count = 0;
                self.settled_bytes = 0;
                return;
            };
            let evicted = self
                .settled
                .get_mut(&heaviest)
                .and_then(|ledger| ledger.records.pop_oldest());
            match evicted {
                Some((_, record)) => self.forget(&heaviest, record.bytes),
                None => {
                    self.settled.remove(&heaviest);
                }
            }
        }
    }

    /// Records currently remembered: in flight and settled.
    pub(crate) fn len(&self) -> usize {
        self.in_flight.len() + self.orphaned.len() + self.settled_count
    }
}

/// The serialized size of a result, counted without building the text.
fn serialized_len(result: &InvocationResult) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, result) {
        Ok(()) => count.0,
        // Unserializable: costs the whole window, so it is never kept.
        Err(_) => usize::MAX / 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorPayload;

    fn key(consumer: &str, id: &str) -> Key {
        (Arc::from(consumer), Arc::from(id))
    }

    fn ok(id: &str) -> InvocationResult {
        InvocationResult::new(Arc::from(id), Arc::from("view:t.c.a"), Ok(None), 1, false)
    }

    fn budget(count: usize) -> WindowLimits {
        WindowLimits {
            count,
            bytes: 1 << 20,
            ttl_ms: 1_000,
            in_flight_per_consumer: 4,
        }
    }

    fn settle(dedupe: &mut Dedupe, k: &Key, now: u64) {
        let Begin::Leader(generation) = dedupe.begin(k, 7, now) else {
            panic!("expected a new attempt");
        };
        dedupe.finish(k, generation, &ok(&k.1), None, now);
    }

    #[test]
    fn keys_are_structured() {
        let mut dedupe = Dedupe::new(budget(10));
        settle(&mut dedupe, &key("ann", "lee x"), 0);
        assert!(matches!(
            dedupe.begin(&key("ann lee", "x"), 7, 0),
            Begin::Leader(_)
        ));
    }

    #[test]
    fn in_flight_records_are_never_evicted() {
        let mut dedupe = Dedupe::new(budget(2));
        let victim = key("victim", "call-1");
        assert!(matches!(dedupe.begin(&victim, 1, 0), Begin::Leader(_)));
        for n in 0..50 {
            settle(&mut dedupe, &key("other", &format!("id-{n}")), 0);
        }
        assert!(matches!(dedupe.begin(&victim, 1, 0), Begin::Join(_)));
    }

    #[test]
    fn fair_share_is_kept_against_a_noisy_consumer() {
        let mut dedupe = Dedupe::new(budget(10));
        let quiet = key("quiet", "only");
        settle(&mut dedupe, &quiet, 0);
        for n in 0..1_000 {
            settle(&mut dedupe, &key("noisy", &format!("id-{n}")), 0);
        }
        assert!(matches!(dedupe.begin(&quiet, 7, 0), Begin::Cached(_)));
        assert!(dedupe.len() <= 10);
    }

    #[test]
    fn count_pressure_evicts_the_consumer_with_the_most_records() {
        let mut dedupe = Dedupe::new(WindowLimits {
            count: 200,
            bytes: 4 << 20,
            ttl_ms: 1_000,
            in_flight_per_consumer: 4,
        });
        let heavy = |id: &str| {
            InvocationResult::new(
                Arc::from(id),
                Arc::from("view:t.c.a"),
                Ok(Some(Arc::new(serde_json::Value::String(
                    "x".repeat(20_000),
                )))),
                1,
                false,
            )
        };
        for n in 0..10 {
            let k = key("victim", &format!("v{n}"));
            let Begin::Leader(generation) = dedupe.begin(&k, 7, 0) else {
                panic!("expected a new attempt");
            };
            dedupe.finish(&k, generation, &heavy(&k.1), None, 0);
        }
        for n in 0..300 {
            settle(&mut dedupe, &key("attacker", &format!("a{n}")), 0);
        }
        for n in 0..10 {
            assert!(
                matches!(
                    dedupe.begin(&key("victim", &format!("v{n}")), 7, 0),
                    Begin::Cached(_)
                ),
                "v{n}"
            );
        }
    }

    #[test]
    fn in_flight_is_capped_per_consumer() {
        let mut dedupe = Dedupe::new(budget(10));
        for n in 0..4 {
            assert!(matches!(
                dedupe.begin(&key("a", &n.to_string()), 1, 0),
                Begin::Leader(_)
            ));
        }
        assert!(matches!(dedupe.begin(&key("a", "5"), 1, 0), Begin::Busy));
        assert!(matches!(
            dedupe.begin(&key("b", "5"), 1, 0),
            Begin::Leader(_)
        ));
    }

    #[test]
    fn bytes_are_budgeted_and_expired_records_forgotten() {
        let mut dedupe = Dedupe::new(WindowLimits {
            count: 1_000,
            bytes: 4_096,
            ttl_ms: 100,
            in_flight_per_consumer: 4,
        });
        for n in 0..200 {
            settle(&mut dedupe, &key("a", &format!("{n:0>200}")), 0);
        }
        assert!(dedupe.settled_bytes <= 4_096);
        let kept = dedupe.len();
        assert!(kept > 0 && kept < 200, "{kept}");
        let last = key("a", &format!("{:0>200}", 199));
        assert!(matches!(dedupe.begin(&last, 7, 100), Begin::Leader(_)));
        let error = InvocationResult::new(
            Arc::from("x"),
            Arc::from("view:t.c.a"),
            Err(ErrorPayload::conflict()),
            1,
            false,
        );
        let k = key("a", "conflicted");
        let Begin::Leader(generation) = dedupe.begin(&k, 1, 0) else {
            panic!("expected a new attempt");
        };
        dedupe.finish(&k, generation, &error, None, 0);
        assert!(matches!(dedupe.begin(&k, 1, 0), Begin::Leader(_)));
    }
}
