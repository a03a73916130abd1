//! Invocation: the request and result types, and the entry point that runs
//! every call through the ten phases (phase 1 here, phases 2–10 in the
//! private `pipeline` module). Build an [`Invocation`] and [`InvokeOptions`]
//! and run them with `Registry::invoke`.
//!
//! The result is a value, never a panic or an `Err`: everything agent-facing,
//! including `CONFIRMATION_REQUIRED`, is an [`InvocationResult`] whose error
//! carries a code, a retry hint and structured details.

pub(crate) mod bounds;
mod pipeline;

pub use crate::invocation::{
    IS_AN_OBSERVATION, IS_NOT_AN_OBSERVATION, Invocation, InvocationResult, InvokeOptions, Kinds,
};

use std::sync::Arc;

use crate::error::ErrorPayload;
use crate::primitives::dedupe::{self, Begin};
use crate::registry::Registry;

/// The leader of a deduplicated call. Finished by phase 10 *before* any
/// host hook (audit sinks, redaction, listeners) runs, so nothing a host
/// supplies can abandon the record; gives the record back if the leader's
/// future is dropped early, so joiners do not wait forever and a retry
/// becomes a new attempt.
pub(crate) struct Leadership<'r> {
    registry: &'r Registry,
    key: dedupe::Key,
    generation: u64,
    /// When the attempt began.
    began_ms: u64,
    finished: bool,
}

impl Leadership<'_> {
    /// `output_bytes`: the output's size when phase 10 measured it (so the
    /// dedupe budget need not serialize the result again).
    pub(crate) fn finish(mut self, result: &InvocationResult, output_bytes: Option<usize>) {
        let inner = &self.registry.inner;
        // The window counts from the settlement (a call longer than the
        // window is still remembered for its full window); read before the
        // lock, and never earlier than the attempt began.
        let now = inner.now_ms().max(self.began_ms);
        inner
            .dedupe
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .finish(&self.key, self.generation, result, output_bytes, now);
        self.finished = true;
    }
}

impl Drop for Leadership<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.registry
                .inner
                .dedupe
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .abandon(&self.key, self.generation);
        }
    }
}

impl Registry {
    /// Runs one call through the ten-phase pipeline.
    ///
    /// Phase 1 (deduplication and conflict) happens here; phases 2–10 in
    /// the pipeline module. Never panics; handler panics settle `EXECUTION_FAILED`.
    pub async fn invoke(
        &self,
        mut request: Invocation,
        options: InvokeOptions,
    ) -> InvocationResult {
        if let Err(refused) = bounds::check_request(&request, &self.inner.config.limits) {
            return bounds::refuse(self, request, refused);
        }
        let inner = &self.inner;
        let consumer = match &options.consumer {
            Some(consumer) => consumer.clone(),
            None => inner.anonymous.clone(),
        };
        let supplied = request.invocation_id.is_some();
        let invocation_id: Arc<str> = match request.invocation_id.take() {
            Some(id) => Arc::from(id),
            None => Arc::from(inner.ids.invocation_id()),
        };
        // Parsed once, here: the pipeline reads the plane and component
        // type from it, never from the raw string.
        let parsed = crate::ids::CapabilityId::split_requested(&request.capability_id);
        let capability_id: Arc<str> = match &parsed {
            Some(parsed) => Arc::clone(parsed.as_arc()),
            None => Arc::from(request.capability_id.as_str()),
        };
        let immediate = |error: ErrorPayload| {
            InvocationResult::new(
                Arc::clone(&invocation_id),
                Arc::clone(&capability_id),
                Err(error),
                inner.version(),
                false,
            )
        };
        if inner.disposed.is_cancelled() {
            return immediate(ErrorPayload::cancelled());
        }
        // Before anything else: a forgetting of the consumer after this
        // moment reaches this call.
        let forget_epoch = inner.confirmations.forget_epoch();

        // Phase 1: dedupe + conflict. A call that came without an id got a
        // fresh one: nobody can retry or join it, so there is nothing to
        // remember.
        let consumer_key = Arc::clone(consumer.key());
        let leadership = if supplied {
            let key: dedupe::Key = (Arc::clone(&consumer_key), Arc::clone(&invocation_id));
            let fingerprint = request.fingerprint();
            let now = inner.now_ms();
            let begin = inner
                .dedupe
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .begin(&key, fingerprint, now);
            let generation = match begin {
                Begin::Conflict => return immediate(ErrorPayload::conflict()),
                Begin::Busy => {
                    return immediate(ErrorPayload::rate_limited(
                        crate::error::RateLimitReason::QueueFull,
                        Some(1_000),
                    ));
                }
                Begin::Cached(result) => return result,
                Begin::Join(mut done) => {
                    // The joiner's own cancellation (or disposal) ends its
                    // wait; the attempt it joined runs on for its leader.
                    let cancelled = async {
                        match &options.cancellation {
                            Some(token) => token.cancelled().await,
                            None => std::future::pending().await,
                        }
                    };
                    return tokio::select! {
                        biased;
                        joined = done.wait_for(Option::is_some) => match joined {
                            Ok(result) => result
                                .clone()
                                .unwrap_or_else(|| immediate(ErrorPayload::cancelled())),
                            Err(_) => immediate(ErrorPayload::cancelled()),
                        },
                        () = cancelled => immediate(ErrorPayload::cancelled()),
                        () = inner.disposed.cancelled() => immediate(ErrorPayload::cancelled()),
                    };
                }
                Begin::Leader(generation) => generation,
            };
            Some(Leadership {
                registry: self,
                key,
                generation,
                began_ms: now,
                finished: false,
            })
        } else {
            None
        };
        let input = request.input.take();
        let call = pipeline::InFlight {
            registry: self,
            request,
            input: std::sync::Mutex::new(input),
            options,
            consumer,
            consumer_key,
            invocation_id,
            capability_id,
            parsed,
            leadership,
            version_moved: std::sync::atomic::AtomicBool::new(false),
            started: tokio::time::Instant::now(),
            version_at_start: inner.version(),
            resolved: std::sync::OnceLock::new(),
            settled: false,
            forget_epoch,
        };
        call.run().await
    }

    /// Dedupe entries currently remembered (bounded by `dedupe_cache_size`).
    pub fn dedupe_len(&self) -> usize {
        self.inner
            .dedupe
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}
