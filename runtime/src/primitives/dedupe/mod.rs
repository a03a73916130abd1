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
//! `CONFIRMATION_REQUIRED`, `RATE_LIMITED`, `INVOCATION_CONFLICT` and
//! `CONFIRMATION_INVALID` with reason `mismatch` (evidence that was not this
//! request's: the confirmation id is not part of the fingerprint) are never
//! kept.

mod cost;
mod orphans;

use cost::cost;
pub(crate) use cost::kept;

use std::sync::Arc;

use rustc_hash::FxHashMap;
use tokio::sync::watch;

use crate::invocation::InvocationResult;
use crate::util::lru::{Lookup, Lru};

/// The structured dedupe key: `(consumer key, invocation id)`, owned (the
/// tests' spelling; a call lends its own as a [`KeyRef`]).
#[cfg(test)]
pub(crate) type Key = (Arc<str>, Arc<str>);

/// A call's dedupe key borrowed from the call (its two shared strings are
/// copied only into the records that keep them).
#[derive(Clone, Copy)]
pub(crate) struct KeyRef<'a>(pub(crate) &'a Arc<str>, pub(crate) &'a Arc<str>);

#[cfg(test)]
impl<'a> From<&'a Key> for KeyRef<'a> {
    fn from(key: &'a Key) -> KeyRef<'a> {
        KeyRef(&key.0, &key.1)
    }
}

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

/// One consumer's part of the window: its calls in flight and its settled
/// records, reached with one lookup of the consumer. Dropped as soon as it
/// holds nothing, so idle consumers cost nothing.
struct Ledger {
    /// Calls in flight, by invocation id.
    running: FxHashMap<Arc<str>, InFlight>,
    /// Orphaned calls of this consumer still running (they count against
    /// its in-flight bound until they settle).
    orphans: usize,
    records: Lru<Arc<str>, Settled>,
    /// Bytes of `records`.
    bytes: usize,
}

impl Ledger {
    fn new(budget: WindowLimits) -> Ledger {
        Ledger {
            running: FxHashMap::default(),
            orphans: 0,
            // Never evicts by itself: the shared budget decides.
            records: Lru::new(budget.count.saturating_add(1), budget.ttl_ms),
            bytes: 0,
        }
    }

    /// Takes the in-flight record of `id` if it is this attempt's, with
    /// the key it was filed under (a settled record reuses it): one lookup
    /// on the common path; another attempt's record (the id was reused
    /// after its consumer was forgotten) goes back.
    fn take(&mut self, id: &Arc<str>, generation: u64) -> Option<(Arc<str>, InFlight)> {
        let (id, record) = self.running.remove_entry(&**id)?;
        if record.generation != generation {
            self.running.insert(id, record);
            return None;
        }
        Some((id, record))
    }

    fn is_idle(&self) -> bool {
        self.running.is_empty() && self.orphans == 0 && self.records.is_empty()
    }
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
    /// Every consumer with a call in flight or a settled record.
    consumers: FxHashMap<Arc<str>, Ledger>,
    /// In-flight records of forgotten consumers, by generation: their
    /// results reach their joiners but are never kept (the identity's ids
    /// mean nothing any more). They still count against the consumer's
    /// in-flight bound until they settle.
    orphaned: FxHashMap<u64, Orphan>,
    /// Calls in flight, all consumers together (orphans apart).
    running: usize,
    settled_count: usize,
    settled_bytes: usize,
    generation: u64,
    budget: WindowLimits,
}

impl Dedupe {
    pub(crate) fn new(budget: WindowLimits) -> Dedupe {
        Dedupe {
            consumers: FxHashMap::default(),
            orphaned: FxHashMap::default(),
            running: 0,
            settled_count: 0,
            settled_bytes: 0,
            generation: 0,
            budget,
        }
    }

    pub(crate) fn begin<'k>(
        &mut self,
        key: impl Into<KeyRef<'k>>,
        fingerprint: u64,
        now_ms: u64,
    ) -> Begin {
        let key = key.into();
        let budget = self.budget;
        // The consumer's key is copied only for a new ledger.
        let ledger = match self.consumers.get_mut(&**key.0) {
            Some(ledger) => ledger,
            None => self
                .consumers
                .entry(Arc::clone(key.0))
                .or_insert_with(|| Ledger::new(budget)),
        };
        if let Some(record) = ledger.running.get_mut(&**key.1) {
            if record.fingerprint != fingerprint {
                return Begin::Conflict;
            }
            let sender = record.done.get_or_insert_with(|| watch::channel(None).0);
            return Begin::Join(sender.subscribe());
        }
        match ledger.records.lookup(&**key.1, now_ms) {
            Lookup::Live(record) if record.fingerprint != fingerprint => return Begin::Conflict,
            Lookup::Live(record) => return Begin::Cached(record.result.clone()),
            Lookup::Expired(expired) => {
                ledger.bytes = ledger.bytes.saturating_sub(expired.bytes);
                self.settled_count = self.settled_count.saturating_sub(1);
                self.settled_bytes = self.settled_bytes.saturating_sub(expired.bytes);
            }
            Lookup::Missing => {}
        }
        if ledger.running.len().saturating_add(ledger.orphans) >= budget.in_flight_per_consumer {
            if ledger.is_idle() {
                self.consumers.remove(&**key.0);
            }
            return Begin::Busy;
        }
        self.generation += 1;
        ledger.running.insert(
            Arc::clone(key.1),
            InFlight {
                fingerprint,
                generation: self.generation,
                done: None,
            },
        );
        self.running += 1;
        Begin::Leader(self.generation)
    }

    /// Records the leader's result (kept when terminal, forgotten
    /// otherwise) and hands it to joiners.
    pub(crate) fn finish<'k>(
        &mut self,
        key: impl Into<KeyRef<'k>>,
        generation: u64,
        result: &InvocationResult,
        output_bytes: Option<usize>,
        now_ms: u64,
    ) {
        let key = key.into();
        let budget = self.budget;
        let Some((ledger, (id, record))) = self
            .consumers
            .get_mut(&**key.0)
            .and_then(|ledger| ledger.take(key.1, generation).map(|taken| (ledger, taken)))
        else {
            if let Some(orphan) = self.take_orphan(generation)
                && let Some(done) = orphan.done
            {
                done.send_replace(Some(result.clone()));
            }
            return;
        };
        self.running = self.running.saturating_sub(1);
        if let Some(done) = record.done {
            done.send_replace(Some(result.clone()));
        }
        let Some(bytes) = cost(key, result, output_bytes, budget) else {
            if ledger.is_idle() {
                self.consumers.remove(&**key.0);
            }
            return;
        };
        let (replaced, evicted) = ledger.records.insert_replacing(
            id,
            Settled {
                fingerprint: record.fingerprint,
                result: result.clone(),
                bytes,
            },
            now_ms,
        );
        let mut gone_bytes = 0;
        let mut gone_count = 0;
        for old in replaced.into_iter().chain(evicted.map(|(_, old)| old)) {
            gone_bytes += old.bytes;
            gone_count += 1;
        }
        ledger.bytes = (ledger.bytes + bytes).saturating_sub(gone_bytes);
        self.settled_bytes = (self.settled_bytes + bytes).saturating_sub(gone_bytes);
        self.settled_count = (self.settled_count + 1).saturating_sub(gone_count);
        self.enforce_budget();
    }

    /// The leader went away without a result: forget the attempt.
    pub(crate) fn abandon<'k>(&mut self, key: impl Into<KeyRef<'k>>, generation: u64) {
        let key = key.into();
        let taken = self
            .consumers
            .get_mut(&**key.0)
            .and_then(|ledger| ledger.take(key.1, generation));
        if taken.is_some() {
            self.running = self.running.saturating_sub(1);
            self.drop_if_idle(key.0);
        } else {
            let _ = self.take_orphan(generation);
        }
    }

    /// Ends an orphaned attempt (its consumer was forgotten while it ran).
    fn take_orphan(&mut self, generation: u64) -> Option<Orphan> {
        let orphan = self.orphaned.remove(&generation)?;
        if let Some(ledger) = self.consumers.get_mut(&*orphan.consumer) {
            ledger.orphans = ledger.orphans.saturating_sub(1);
        }
        self.drop_if_idle(&orphan.consumer);
        Some(orphan)
    }

    /// Drops `consumer`'s ledger once it holds nothing.
    fn drop_if_idle(&mut self, consumer: &str) {
        if self.consumers.get(consumer).is_some_and(Ledger::is_idle) {
            self.consumers.remove(consumer);
        }
    }

    /// Over budget: the consumer holding the most of what overflowed (records
    /// when the count did, bytes when the bytes did) gives up its oldest
    /// record, until the window fits. A consumer within its fair share of
    /// both is never the one chosen. The scan is over the consumers with a
    /// ledger: at most `count` hold records, the others have calls in
    /// flight (bounded by admission).
    fn enforce_budget(&mut self) {
        loop {
            let by_count = self.settled_count > self.budget.count;
            if !by_count && self.settled_bytes <= self.budget.bytes {
                return;
            }
            let heaviest = self
                .consumers
                .iter_mut()
                .filter(|(_, ledger)| !ledger.records.is_empty())
                .max_by_key(|(_, ledger)| {
                    if by_count {
                        (ledger.records.len(), ledger.bytes)
                    } else {
                        (ledger.bytes, ledger.records.len())
                    }
                });
            let Some((consumer, ledger)) = heaviest else {
                self.settled_count = 0;
                self.settled_bytes = 0;
                return;
            };
            if let Some((_, record)) = ledger.records.pop_oldest() {
                ledger.bytes = ledger.bytes.saturating_sub(record.bytes);
                self.settled_count = self.settled_count.saturating_sub(1);
                self.settled_bytes = self.settled_bytes.saturating_sub(record.bytes);
            } else {
                // Never expected (a non-empty map has an oldest entry); the
                // loop still ends: this consumer's records are let go.
                self.settled_count = self.settled_count.saturating_sub(ledger.records.len());
                self.settled_bytes = self.settled_bytes.saturating_sub(ledger.bytes);
                ledger.records = ledger.records.empty_like();
                ledger.bytes = 0;
            }
            if ledger.is_idle() {
                let consumer = Arc::clone(consumer);
                self.consumers.remove(&consumer);
            }
        }
    }

    /// Records currently remembered: in flight and settled.
    pub(crate) fn len(&self) -> usize {
        self.running + self.orphaned.len() + self.settled_count
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
    fn consumers_holding_nothing_leave_nothing_behind() {
        let mut dedupe = Dedupe::new(budget(2));
        // Calls that settle uncacheable, abandoned calls, and refusals.
        for n in 0..100 {
            let k = key(&format!("c{n}"), "1");
            let Begin::Leader(generation) = dedupe.begin(&k, 7, 0) else {
                panic!("expected a new attempt");
            };
            if n % 2 == 0 {
                let busy = InvocationResult::new(
                    Arc::clone(&k.1),
                    Arc::from("view:t.c.a"),
                    Err(ErrorPayload::conflict()),
                    1,
                    false,
                );
                dedupe.finish(&k, generation, &busy, None, 0);
            } else {
                dedupe.abandon(&k, generation);
            }
        }
        assert!(dedupe.consumers.is_empty());
        let mut closed = Dedupe::new(WindowLimits {
            in_flight_per_consumer: 0,
            ..budget(2)
        });
        assert!(matches!(closed.begin(&key("a", "1"), 7, 0), Begin::Busy));
        assert!(closed.consumers.is_empty());
        // Settled records of many consumers: the count budget evicts whole
        // consumers' ledgers once their last record goes.
        for n in 0..100 {
            settle(&mut dedupe, &key(&format!("c{n}"), "1"), 0);
        }
        assert_eq!(dedupe.len(), 2);
        assert_eq!(dedupe.consumers.len(), 2);
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
