//! Invocation: the request and result types, and the entry point that runs
//! every call through the ten phases (phase 1 here, phases 2–10 in the private `pipeline` module).
//!
//! The result is a value, never a panic or an `Err`: everything agent-facing,
//! including `CONFIRMATION_REQUIRED`, is an [`InvocationResult`] whose error
//! carries a code, a retry hint and structured details.

pub(crate) mod bounds;
pub(crate) mod concurrency;
pub(crate) mod dedupe;
mod pipeline;

use std::sync::Arc;
use std::time::Duration;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::canonical::{Fnv1a64, Sink, write_canonical, write_string};
use crate::context::Consumer;
use crate::error::ErrorPayload;
use crate::registry::Registry;
use dedupe::Begin;

/// One call, as an agent (or adapter) issues it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Invocation {
    /// Idempotency key; adapters pass their tool-call id. Minted when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation_id: Option<String>,
    /// `view:…` or `domain:…`.
    pub capability_id: String,
    /// Required when more than one live instance offers the capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The staleness token from discovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_id: Option<String>,
    /// Version hint, enforced for destructive and external effects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface_version: Option<String>,
    /// The agent's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Evidence from a resolved confirmation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_id: Option<String>,
}

impl Invocation {
    /// A call of `capability_id` with no input.
    pub fn new(capability_id: impl Into<String>) -> Invocation {
        Invocation {
            capability_id: capability_id.into(),
            ..Invocation::default()
        }
    }

    /// Sets the input.
    #[must_use]
    pub fn input(mut self, input: Value) -> Self {
        self.input = Some(input);
        self
    }

    /// Sets the invocation id.
    #[must_use]
    pub fn invocation_id(mut self, id: impl Into<String>) -> Self {
        self.invocation_id = Some(id.into());
        self
    }

    /// Names the instance.
    #[must_use]
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance_id = Some(instance.into());
        self
    }

    /// Sends the registration id from discovery.
    #[must_use]
    pub fn registration(mut self, registration_id: impl Into<String>) -> Self {
        self.registration_id = Some(registration_id.into());
        self
    }

    /// Sends the surface version from discovery.
    #[must_use]
    pub fn surface_version(mut self, version: impl Into<String>) -> Self {
        self.surface_version = Some(version.into());
        self
    }

    /// Sends confirmation evidence.
    #[must_use]
    pub fn confirmation(mut self, confirmation_id: impl Into<String>) -> Self {
        self.confirmation_id = Some(confirmation_id.into());
        self
    }

    /// The request fingerprint: FNV-1a 64 over the canonical JSON of
    /// `{capabilityId, registrationId, instanceId, surfaceVersion, input,
    /// confirmationId}` as issued (absent fields omitted).
    pub fn fingerprint(&self) -> u64 {
        enum Field<'a> {
            Text(&'a str),
            Json(&'a Value),
        }
        // Keys in canonical (sorted) order, streamed without building a Value.
        let fields = [
            ("capabilityId", Some(Field::Text(&self.capability_id))),
            (
                "confirmationId",
                self.confirmation_id.as_deref().map(Field::Text),
            ),
            ("input", self.input.as_ref().map(Field::Json)),
            ("instanceId", self.instance_id.as_deref().map(Field::Text)),
            (
                "registrationId",
                self.registration_id.as_deref().map(Field::Text),
            ),
            (
                "surfaceVersion",
                self.surface_version.as_deref().map(Field::Text),
            ),
        ];
        let mut hasher = Fnv1a64::new();
        hasher.write(b"{");
        let mut first = true;
        for (key, field) in fields {
            let Some(field) = field else { continue };
            if !first {
                hasher.write(b",");
            }
            first = false;
            write_string(key, &mut hasher);
            hasher.write(b":");
            match field {
                Field::Text(text) => write_string(text, &mut hasher),
                Field::Json(value) => write_canonical(value, &mut hasher),
            }
        }
        hasher.write(b"}");
        hasher.finish()
    }
}

/// How to run one call.
#[derive(Clone, Debug, Default)]
pub struct InvokeOptions {
    /// Who calls (default: `embedded:anonymous`).
    pub consumer: Option<Consumer>,
    /// External cancellation: firing it settles `CANCELLED`.
    pub cancellation: Option<CancellationToken>,
    /// Overrides the capability's and the registry's timeout.
    pub timeout: Option<Duration>,
    /// Component-type prefixes the call may reach (a toolset's scope
    /// floor); outside them a capability is not found. Empty: everything.
    pub scope: Vec<String>,
}

impl InvokeOptions {
    /// Options for `consumer`.
    pub fn consumer(consumer: Consumer) -> InvokeOptions {
        InvokeOptions {
            consumer: Some(consumer),
            ..InvokeOptions::default()
        }
    }
}

/// The settled outcome of a call.
#[derive(Clone, Debug, PartialEq)]
pub struct InvocationResult {
    invocation_id: Arc<str>,
    capability_id: Arc<str>,
    outcome: Result<Option<Arc<Value>>, ErrorPayload>,
    surface_version: u64,
    surface_changed: bool,
}

impl InvocationResult {
    pub(crate) fn new(
        invocation_id: Arc<str>,
        capability_id: Arc<str>,
        outcome: Result<Option<Arc<Value>>, ErrorPayload>,
        surface_version: u64,
        surface_changed: bool,
    ) -> InvocationResult {
        InvocationResult {
            invocation_id,
            capability_id,
            outcome,
            surface_version,
            surface_changed,
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }

    /// The output of a successful call (`None` for actions returning `()`).
    pub fn output(&self) -> Option<&Value> {
        self.outcome
            .as_ref()
            .ok()
            .and_then(|output| output.as_deref())
    }

    /// The error of a failed call.
    pub fn error(&self) -> Option<&ErrorPayload> {
        self.outcome.as_ref().err()
    }

    /// The invocation id (the caller's, or a minted one).
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// The capability called.
    pub fn capability_id(&self) -> &str {
        &self.capability_id
    }

    /// The surface version at settlement.
    pub fn surface_version(&self) -> u64 {
        self.surface_version
    }

    /// Whether the surface changed while the call ran (re-discover).
    pub fn surface_changed(&self) -> bool {
        self.surface_changed
    }

    /// The output or the error, consuming the result.
    pub fn into_outcome(self) -> Result<Option<Value>, ErrorPayload> {
        self.outcome.map(|output| {
            output.map(|value| Arc::try_unwrap(value).unwrap_or_else(|shared| (*shared).clone()))
        })
    }
}

/// `{status, invocationId, capabilityId, output? | error, surfaceVersion, surfaceChanged?}`.
impl Serialize for InvocationResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("status", if self.is_ok() { "ok" } else { "error" })?;
        map.serialize_entry("invocationId", &*self.invocation_id)?;
        map.serialize_entry("capabilityId", &*self.capability_id)?;
        match &self.outcome {
            Ok(Some(output)) => map.serialize_entry("output", &**output)?,
            Ok(None) => {}
            Err(error) => map.serialize_entry("error", error)?,
        }
        map.serialize_entry("surfaceVersion", &self.surface_version.to_string())?;
        if self.surface_changed {
            map.serialize_entry("surfaceChanged", &true)?;
        }
        map.end()
    }
}

/// Which kinds of capability a call may address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Observations only.
    Observation,
    /// Actions and procedures only.
    Operation,
}

/// The leader of a deduplicated call. Finished by phase 10 *before* any
/// host hook (audit sinks, redaction, listeners) runs, so nothing a host
/// supplies can abandon the record; gives the record back if the leader's
/// future is dropped early, so joiners do not wait forever and a retry
/// becomes a new attempt.
pub(crate) struct Leadership<'r> {
    registry: &'r Registry,
    key: dedupe::Key,
    generation: u64,
    /// When the attempt began; the dedupe window counts from here.
    began_ms: u64,
    finished: bool,
}

impl Leadership<'_> {
    pub(crate) fn finish(mut self, result: &InvocationResult) {
        let inner = &self.registry.inner;
        let now = self.began_ms;
        inner
            .dedupe
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .finish(&self.key, self.generation, result, now);
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
    pub async fn invoke(&self, request: Invocation, options: InvokeOptions) -> InvocationResult {
        self.invoke_expecting(request, options, None).await
    }

    /// [`invoke`](Self::invoke) for adapters whose verb admits only some
    /// kinds (a meta-mode `surface_read` reads observations only): a target
    /// of another kind settles `INVALID_INPUT` after resolution, before
    /// anything runs.
    pub(crate) async fn invoke_expecting(
        &self,
        mut request: Invocation,
        options: InvokeOptions,
        expect: Option<Expect>,
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
        let capability_id: Arc<str> = Arc::from(request.capability_id.as_str());
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
                    return immediate(ErrorPayload::rate_limited("queue-full", Some(1_000)));
                }
                Begin::Cached(result) => return result,
                Begin::Join(mut done) => {
                    return match done.wait_for(Option::is_some).await {
                        Ok(result) => result
                            .clone()
                            .unwrap_or_else(|| immediate(ErrorPayload::cancelled())),
                        Err(_) => immediate(ErrorPayload::cancelled()),
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
        let call = pipeline::Call {
            registry: self,
            request,
            input: std::sync::Mutex::new(input),
            options,
            consumer,
            consumer_key,
            invocation_id,
            capability_id,
            expect,
            leadership,
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
