//! Phase 1: deduplication and conflict detection.
//!
//! The key is `consumerKey + " " + invocationId`, scoped to the registry.
//! A retry with the same key and the same request fingerprint joins the
//! in-flight execution or returns the cached terminal result verbatim; the
//! same key with a different fingerprint fails closed with
//! `INVOCATION_CONFLICT`. Terminal results are kept in a bounded LRU with a
//! time to live; `CONFIRMATION_REQUIRED`, `RATE_LIMITED` and
//! `INVOCATION_CONFLICT` are never kept.

use std::sync::Arc;

use tokio::sync::watch;

use super::InvocationResult;
use crate::util::lru::Lru;

enum Record {
    InFlight {
        fingerprint: u64,
        generation: u64,
        /// Created by the first joiner; the leader reports through it.
        done: Option<watch::Sender<Option<InvocationResult>>>,
    },
    Done {
        fingerprint: u64,
        result: InvocationResult,
    },
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
}

/// The dedupe window of one registry.
pub(crate) struct Dedupe {
    records: Lru<Arc<str>, Record>,
    generation: u64,
}

impl Dedupe {
    pub(crate) fn new(capacity: usize, ttl_ms: u64) -> Dedupe {
        Dedupe {
            records: Lru::new(capacity, ttl_ms),
            generation: 0,
        }
    }

    pub(crate) fn begin(&mut self, key: &Arc<str>, fingerprint: u64, now_ms: u64) -> Begin {
        match self.records.get(&**key, now_ms) {
            Some(Record::InFlight { fingerprint: f, .. } | Record::Done { fingerprint: f, .. })
                if *f != fingerprint =>
            {
                return Begin::Conflict;
            }
            Some(Record::InFlight { done, .. }) => {
                let sender = done.get_or_insert_with(|| watch::channel(None).0);
                return Begin::Join(sender.subscribe());
            }
            Some(Record::Done { result, .. }) => return Begin::Cached(result.clone()),
            None => {}
        }
        self.generation += 1;
        self.records.insert(
            Arc::clone(key),
            Record::InFlight {
                fingerprint,
                generation: self.generation,
                done: None,
            },
            now_ms,
        );
        Begin::Leader(self.generation)
    }

    /// Records the leader's result (cached when terminal, forgotten
    /// otherwise) and hands it to joiners.
    pub(crate) fn finish(
        &mut self,
        key: &str,
        generation: u64,
        result: &InvocationResult,
        now_ms: u64,
    ) {
        let Some(record) = self.records.refresh(key, now_ms) else {
            return;
        };
        let Record::InFlight {
            fingerprint,
            generation: g,
            done,
        } = record
        else {
            return;
        };
        if *g != generation {
            return;
        }
        if let Some(done) = done.take() {
            done.send_replace(Some(result.clone()));
        }
        if result
            .error()
            .is_some_and(|error| !error.code().cacheable())
        {
            self.records.remove(key);
            return;
        }
        *record = Record::Done {
            fingerprint: *fingerprint,
            result: result.clone(),
        };
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
