//! Phase 1: deduplication and conflict detection.
//!
//! The key is `consumerKey + " " + invocationId`, scoped to the registry.
//! A retry with the same key and the same request fingerprint joins the
//! in-flight execution or returns the cached terminal result verbatim; the
//! same key with a different fingerprint fails closed with
//! `INVOCATION_CONFLICT`. Terminal results are kept in a bounded LRU with a
//! time to live; `CONFIRMATION_REQUIRED`, `RATE_LIMITED` and
//! `INVOCATION_CONFLICT` are never kept.

use tokio::sync::watch;

use super::InvocationResult;
use crate::util::lru::Lru;

enum Record {
    InFlight {
        fingerprint: u64,
        generation: u64,
        done: watch::Receiver<Option<InvocationResult>>,
    },
    Done {
        fingerprint: u64,
        result: InvocationResult,
    },
}

/// What phase 1 decided.
pub(crate) enum Begin {
    /// A new attempt: run the pipeline and report through the sender.
    Leader(watch::Sender<Option<InvocationResult>>, u64),
    /// The same request is running: wait for its result.
    Join(watch::Receiver<Option<InvocationResult>>),
    /// The same request already settled: its result, verbatim.
    Cached(InvocationResult),
    /// The key was used for a different request.
    Conflict,
}

/// The dedupe window of one registry.
pub(crate) struct Dedupe {
    records: Lru<String, Record>,
    generation: u64,
}

impl Dedupe {
    pub(crate) fn new(capacity: usize, ttl_ms: u64) -> Dedupe {
        Dedupe {
            records: Lru::new(capacity, ttl_ms),
            generation: 0,
        }
    }

    pub(crate) fn begin(&mut self, key: &str, fingerprint: u64, now_ms: u64) -> Begin {
        match self.records.get(key, now_ms) {
            Some(Record::InFlight { fingerprint: f, .. } | Record::Done { fingerprint: f, .. })
                if *f != fingerprint =>
            {
                return Begin::Conflict;
            }
            Some(Record::InFlight { done, .. }) => return Begin::Join(done.clone()),
            Some(Record::Done { result, .. }) => return Begin::Cached(result.clone()),
            None => {}
        }
        self.generation += 1;
        let (sender, receiver) = watch::channel(None);
        self.records.insert(
            key.to_owned(),
            Record::InFlight {
                fingerprint,
                generation: self.generation,
                done: receiver,
            },
            now_ms,
        );
        Begin::Leader(sender, self.generation)
    }

    /// Records the leader's result: cached when terminal, forgotten otherwise.
    pub(crate) fn finish(
        &mut self,
        key: &str,
        generation: u64,
        result: &InvocationResult,
        now_ms: u64,
    ) {
        let ours = matches!(
            self.records.peek(key, u64::MIN),
            Some(Record::InFlight { generation: g, .. }) if *g == generation
        );
        if !ours {
            return;
        }
        let cacheable = result.error().is_none_or(|error| error.code().cacheable());
        if !cacheable {
            self.records.remove(key);
            return;
        }
        if let Some(record) = self.records.refresh(key, now_ms) {
            let fingerprint = match record {
                Record::InFlight { fingerprint, .. } | Record::Done { fingerprint, .. } => {
                    *fingerprint
                }
            };
            *record = Record::Done {
                fingerprint,
                result: result.clone(),
            };
        }
    }

    /// The leader went away without a result: forget the attempt.
    pub(crate) fn abandon(&mut self, key: &str, generation: u64) {
        let ours = matches!(
            self.records.peek(key, u64::MIN),
            Some(Record::InFlight { generation: g, .. }) if *g == generation
        );
        if ours {
            self.records.remove(key);
        }
    }

    /// Entries currently remembered (bounded by the cache size).
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }
}
