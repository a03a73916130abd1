//! Invocation: the request and result types, and the pipeline that runs
//! every call through the ten phases on the registry's services (phase 1
//! here, phases 2–10 in the private `pipeline` module). Build an
//! [`Invocation`] and [`InvokeOptions`] and run them with
//! `Registry::invoke`, which calls this module's `invoke`.
//!
//! The result is a value, never a panic or an `Err`: everything agent-facing,
//! including `CONFIRMATION_REQUIRED`, is an [`InvocationResult`] whose error
//! carries a code, a retry hint and structured details.

pub(crate) mod bounds;
mod dedupe_fingerprint;
mod join;
mod pipeline;
mod shared;

pub use crate::invocation::{
    IS_AN_OBSERVATION, IS_NOT_AN_OBSERVATION, Invocation, InvocationResult, InvokeOptions, Kinds,
};

use std::sync::Arc;

use crate::error::ErrorPayload;
use crate::primitives::dedupe::{self, Begin};
use crate::registry::Services;

/// The leader of a deduplicated call: its attempt in the dedupe window,
/// filed under the call's own key (its consumer's key and invocation id,
/// borrowed from the call when needed, never copied). The call finishes it
/// in phase 10 *before* any host hook (audit sinks, redaction, listeners)
/// runs, so nothing a host supplies can abandon the record; a call dropped
/// or unwound before it finished gives the record back (see the call's
/// `Drop`), so joiners do not wait forever and a retry becomes a new
/// attempt.
#[must_use = "a leadership is finished or abandoned, never dropped"]
pub(crate) struct Leadership {
    generation: u64,
    /// When the attempt began.
    began_ms: u64,
}

impl Leadership {
    /// `output_bytes`: the output's size when phase 10 measured it (so the
    /// dedupe budget need not serialize the result again).
    /// `settled_ms`: the clock's reading at the settlement.
    pub(crate) fn finish(
        self,
        services: &Services,
        key: dedupe::KeyRef<'_>,
        result: &InvocationResult,
        output_bytes: Option<usize>,
        settled_ms: u64,
    ) {
        // The window counts from the settlement (a call longer than the
        // window is still remembered for its full window); read before the
        // lock, and never earlier than the attempt began.
        let now = settled_ms.max(self.began_ms);
        services
            .dedupe()
            .finish(key, self.generation, result, output_bytes, now);
    }

    /// Gives the record back: the attempt ended without a result.
    pub(crate) fn abandon(self, services: &Services, key: dedupe::KeyRef<'_>) {
        services.dedupe().abandon(key, self.generation);
    }
}

/// A call phase 1 did not settle at once (refused, cached, conflicting,
/// busy, disposed).
#[allow(clippy::large_enum_variant)] // the large variant is the common one
enum Started<'r> {
    /// The call runs through phases 2–10.
    Run(pipeline::InFlight<'r>),
    /// A twin with the same invocation id is running: its result, waited
    /// for on the heap (the rare path).
    Wait(std::pin::Pin<Box<dyn std::future::Future<Output = InvocationResult> + Send + 'r>>),
}

/// Runs one call through the ten-phase pipeline on `services`.
///
/// Phase 1 (deduplication and conflict) happens here; phases 2–10 in the
/// pipeline module. Never panics; handler panics settle `EXECUTION_FAILED`.
pub(crate) async fn invoke(
    services: &Arc<Services>,
    request: Invocation,
    options: InvokeOptions,
) -> InvocationResult {
    // Phase 1 runs synchronously and consumes the request: the future
    // then holds only the call in flight (small futures are cheap to
    // move), and the rare wait for a deduplicated twin lives on the heap.
    // (Matched by reference: the call is stored once in this future.)
    let mut started = match begin(services, request, options) {
        Ok(started) => started,
        Err(settled) => return settled,
    };
    match &mut started {
        Started::Run(call) => call.run().await,
        Started::Wait(waiting) => waiting.as_mut().await,
    }
}

/// Phase 1 (bounds, ids, dedupe and conflict) and the call in flight.
fn begin(
    services: &Arc<Services>,
    mut request: Invocation,
    mut options: InvokeOptions,
) -> Result<Started<'_>, InvocationResult> {
    // A call with an invocation id is fingerprinted in the same walk
    // of its input as its bounds are checked.
    let supplied = request.invocation_id.is_some();
    let fingerprint =
        match bounds::check_request_fingerprinting(&request, services.limits(), supplied) {
            Ok(fingerprint) => fingerprint,
            Err(refused) => return Err(bounds::refuse(services, request, refused)),
        };
    let inner = services;
    // The call's one reading of the time at its start.
    let started = crate::util::time::Instant::now();
    // The call owns its consumer from here (the options keep none); the
    // anonymous one is borrowed.
    let consumer = match options.consumer.take() {
        Some(consumer) => std::borrow::Cow::Owned(consumer),
        None => std::borrow::Cow::Borrowed(inner.anonymous()),
    };
    let invocation_id: Arc<str> = match request.invocation_id.take() {
        Some(id) => Arc::from(id),
        None => inner.ids().invocation_id_arc(),
    };
    // Parsed once, here: the pipeline reads the plane and component
    // type from it, never from the raw string.
    let parsed = crate::ids::CapabilityId::split_requested(&request.capability_id);
    // The result's capability id is the contract's own once resolved
    // (no copy); a call settled here carries a copy of the requested.
    let immediate = |error: ErrorPayload| {
        InvocationResult::new(
            Arc::clone(&invocation_id),
            Arc::from(request.capability_id.as_str()),
            Err(error),
            inner.version(),
            false,
        )
    };
    if inner.disposal().is_cancelled() {
        return Err(immediate(ErrorPayload::cancelled()));
    }
    // Before anything else: a forgetting of the consumer after this
    // moment reaches this call.
    let forget_epoch = inner.confirmations().forget_epoch();

    // Phase 1: dedupe + conflict. A call that came without an id got a
    // fresh one: nobody can retry or join it, so there is nothing to
    // remember.
    let leadership = if let Some(fingerprint) = fingerprint {
        // The same id and request under another reach is a conflict,
        // never a way past a scope floor, a verb or missing grants.
        let fingerprint = dedupe_fingerprint::of_call(
            fingerprint,
            &options.scope,
            options.kinds,
            consumer.grants(),
        );
        let now = inner.ms_at(started);
        let begin = inner.dedupe().begin(
            dedupe::KeyRef(consumer.key(), &invocation_id),
            fingerprint,
            now,
        );
        let generation = match begin {
            Begin::Conflict => return Err(immediate(ErrorPayload::conflict())),
            Begin::Busy => {
                return Err(immediate(ErrorPayload::rate_limited(
                    crate::error::RateLimitReason::QueueFull,
                    Some(1_000),
                )));
            }
            Begin::Cached(result) => return Err(result),
            Begin::Join(done) => {
                let (limit, idempotent) =
                    join::limit(services, &request.capability_id, parsed, &options);
                let join = join::Join {
                    services,
                    done,
                    cancellation: options.cancellation,
                    deadline: join::deadline(started, limit),
                    cancelled: immediate(ErrorPayload::cancelled()),
                    timed_out: immediate(join::timed_out(limit, idempotent)),
                };
                return Ok(Started::Wait(Box::pin(join.wait())));
            }
            Begin::Leader(generation) => generation,
        };
        Some(Leadership {
            generation,
            began_ms: now,
        })
    } else {
        None
    };
    // Across replicas: the same id is claimed in the shared store too.
    let claimed = match (&leadership, &inner.config().shared) {
        (Some(_), Some(shared)) => {
            let (limit, _) = join::limit(services, &request.capability_id, parsed, &options);
            let limits = inner.limits();
            let keep = limits.dedupe_cache_ttl;
            let fingerprint = dedupe_fingerprint::shared(
                &request.portable_digest(),
                &options.scope,
                options.kinds,
                consumer.grants(),
            );
            // The registry's own limits, whatever the target declares.
            let wait = options.timeout.unwrap_or_else(|| {
                limits
                    .action_timeout
                    .max(limits.observation_timeout)
                    .max(limits.procedure_timeout)
            });
            Some(shared::Claimed {
                shared,
                key: shared.namespace.dedupe(consumer.key(), &invocation_id),
                lease: crate::store::Lease::new(fingerprint).within(
                    &shared.namespace.quota(consumer.principal()),
                    limits.shared_records_per_principal.max(1),
                ),
                ttl: limit
                    .saturating_add(limits.confirmation_ttl)
                    .saturating_add(keep),
                keep,
                max_record: limits.max_output_bytes.saturating_add(4_096),
                wait: join::wait(wait),
            })
        }
        _ => None,
    };
    let input = request.input.take();
    let call = pipeline::InFlight {
        services,
        request,
        input,
        options,
        consumer,
        invocation_id,
        capability_id: std::sync::OnceLock::new(),
        parsed,
        leadership,
        version_moved: std::sync::atomic::AtomicBool::new(false),
        started,
        version_at_start: inner.version(),
        resolved: None,
        settled: false,
        forget_epoch,
    };
    match claimed {
        Some(claimed) => Ok(Started::Wait(Box::pin(claimed.run(call)))),
        None => Ok(Started::Run(call)),
    }
}
