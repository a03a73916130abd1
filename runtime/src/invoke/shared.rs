//! Phase 1 across replicas: a call that leads its invocation id in this
//! process also claims it in the registry's shared store before it runs,
//! so a retry that lands on another replica joins or replays it and never
//! runs it twice. The settlement is written to the store before the result
//! is returned; the store's failure fails the call closed.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ErrorPayload;
use crate::invoke::InvocationResult;
use crate::store::Attached as Shared;
use crate::store::{Claim, Lease};

use super::pipeline::InFlight;

/// A settled result as the store keeps it (its invocation id is the key's).
#[derive(Serialize, Deserialize)]
struct Record {
    /// The capability called.
    c: String,
    /// The output of a successful call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    o: Option<Value>,
    /// The error of a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<ErrorPayload>,
    /// The surface version at the settlement (the leader's).
    v: u64,
    /// Whether the surface changed while it ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    x: bool,
}

impl Record {
    fn of(result: &InvocationResult) -> Option<String> {
        let record = Record {
            c: result.capability_id().to_owned(),
            o: result.output().cloned(),
            e: result.error().cloned(),
            v: result.surface_version(),
            x: result.surface_changed(),
        };
        serde_json::to_string(&record).ok()
    }

    fn into_result(self, invocation_id: &Arc<str>) -> InvocationResult {
        let outcome = match self.e {
            Some(error) => Err(error),
            None => Ok(self.o.map(Arc::new)),
        };
        InvocationResult::new(
            Arc::clone(invocation_id),
            Arc::from(self.c),
            outcome,
            self.v,
            self.x,
        )
    }
}

/// What the store's dedupe record of a call is, and how long it is held.
pub(super) struct Claimed<'s> {
    pub(super) shared: &'s Shared,
    pub(super) key: String,
    /// This attempt's lease (its fingerprint and quota), made before the
    /// claim is sent.
    pub(super) lease: Lease,
    /// How long an unsettled claim holds the key: the call's time limit,
    /// a person's answer and the window, so a leader that dies leaves its
    /// key held as long as a settled record would be.
    pub(super) ttl: Duration,
    /// How long a settled record is kept.
    pub(super) keep: Duration,
    /// The largest record kept (a larger result is not kept, as in the
    /// process's own window).
    pub(super) max_record: usize,
    /// How long a retry waits for the running twin on another replica:
    /// the registry's limits, never the target's own (a retry of a hidden
    /// capability waits as one of a capability that does not exist).
    pub(super) wait: Duration,
}

/// Gives a claim back when the call that holds it is dropped before its
/// settlement is written: a claim still in flight is released (nothing
/// ran), a call that ran is settled `CANCELLED` as the process's own window
/// records it (a retry never runs it again). Written by a detached task;
/// without a runtime, or when the write fails, the claim waits out its
/// lease (retries time out, never run).
struct Guard {
    store: Arc<dyn crate::store::SharedStore>,
    key: String,
    lease: Lease,
    keep: Duration,
    /// The record to settle with, once the call runs (`None`: release).
    ran: Option<String>,
    armed: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (store, key, lease, keep) = (
            Arc::clone(&self.store),
            std::mem::take(&mut self.key),
            self.lease.clone(),
            self.keep,
        );
        let ran = self.ran.take();
        let _ = crate::util::time::spawn(async move {
            let _ = match ran {
                Some(record) => store.settle(&key, &lease, &record, keep).await.map(|_| ()),
                None => store.release(&key, &lease).await,
            };
        });
    }
}

impl Claimed<'_> {
    /// Runs `call` if the store lets this attempt lead; otherwise answers
    /// with the twin's result, the conflict, or the store's failure.
    pub(super) async fn run(self, mut call: InFlight<'_>) -> InvocationResult {
        let store = &*self.shared.store;
        let mut guard = Guard {
            store: Arc::clone(&self.shared.store),
            key: self.key.clone(),
            lease: self.lease.clone(),
            keep: self.keep,
            ran: None,
            armed: true,
        };
        // Until it runs, a call dropped here gives this process's record
        // back instead of settling `CANCELLED` into it: nothing ran, and
        // the store may hold another replica's answer for its id.
        call.settled = true;
        let claim = store.claim(&self.key, &self.lease, self.ttl).await;
        let claim = match claim {
            Ok(Claim::Running) => {
                let cancellation = call.options.cancellation.clone();
                let settled = async {
                    crate::util::time::timeout(
                        self.wait,
                        store.wait(&self.key, &self.lease, self.ttl),
                    )
                    .await
                    .ok()
                };
                let cancelled = async {
                    match &cancellation {
                        Some(token) => token.cancelled().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    settled = settled => match settled {
                        Some(claim) => claim,
                        None => {
                            let limit = crate::util::millis::millis(self.wait);
                            return call.answered_elsewhere(ErrorPayload::timeout(limit, false));
                        }
                    },
                    () = cancelled => {
                        return call.answered_elsewhere(ErrorPayload::cancelled());
                    }
                    () = call.services.disposal().cancelled() => {
                        return call.answered_elsewhere(ErrorPayload::cancelled());
                    }
                }
            }
            other => other,
        };
        match claim {
            // Free, or freed by a twin that ended with nothing kept (it
            // did not run: refused, asked the person, or dropped before it
            // ran): this attempt runs.
            Ok(Claim::Leader) => {
                // From here a drop settles `CANCELLED`, as the window here does.
                call.settled = false;
                guard.ran = Record::of(&InvocationResult::new(
                    Arc::clone(&call.invocation_id),
                    Arc::from(call.requested_id()),
                    Err(ErrorPayload::cancelled()),
                    call.services.version(),
                    false,
                ));
                let result = call.run().await;
                // Until the settlement is written, a drop writes it.
                guard.ran = self.record(&result);
                self.write(guard.ran.as_deref()).await;
                guard.armed = false;
                result
            }
            Ok(Claim::Busy) => {
                guard.armed = false;
                // As the window here answers a consumer with too many
                // calls in flight: one of them settling makes room.
                call.answered_elsewhere(ErrorPayload::rate_limited(
                    crate::error::RateLimitReason::QueueFull,
                    Some(1_000),
                ))
            }
            Ok(Claim::Settled(record)) => {
                guard.armed = false;
                match serde_json::from_str::<Record>(&record) {
                    Ok(record) => {
                        let result = record.into_result(&call.invocation_id);
                        call.answered_elsewhere_with(result)
                    }
                    Err(_) => call.answered_elsewhere(ErrorPayload::store_unavailable()),
                }
            }
            Ok(Claim::Conflict) => {
                guard.armed = false;
                call.answered_elsewhere(ErrorPayload::conflict())
            }
            // Never returned by `wait`; by `claim` only when asked
            // concurrently: a twin.
            Ok(Claim::Running) => {
                guard.armed = false;
                let limit = crate::util::millis::millis(self.wait);
                call.answered_elsewhere(ErrorPayload::timeout(limit, false))
            }
            Err(error) => {
                tracing::warn!(store = store.name(), %error, "the shared store failed: the call did not run");
                call.answered_elsewhere(ErrorPayload::store_unavailable())
            }
        }
    }

    /// The record kept for `result` (`None`: not kept; the key is given
    /// back).
    fn record(&self, result: &InvocationResult) -> Option<String> {
        crate::primitives::dedupe::kept(result)
            .then(|| Record::of(result))
            .flatten()
            .filter(|record| record.len() <= self.max_record)
    }

    /// Writes the settlement `record` (or gives the key back) before the
    /// result is returned. A failed write leaves the claim in the store
    /// until its lease: retries wait and time out, and never run the call
    /// again.
    async fn write(&self, record: Option<&str>) {
        let store = &*self.shared.store;
        let written = match record {
            Some(record) => {
                store
                    .settle(&self.key, &self.lease, record, self.keep)
                    .await
            }
            None => store.release(&self.key, &self.lease).await.map(|()| true),
        };
        match written {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                store = store.name(),
                "a call outlived its claim in the shared store: its settlement was not recorded"
            ),
            Err(error) => tracing::warn!(
                store = store.name(),
                %error,
                "the shared store did not take a settlement: retries of this invocation id wait until its lease ends"
            ),
        }
    }
}
