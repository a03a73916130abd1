//! Phases 2–10 of the invocation pipeline, in order, each its own step:
//!
//! 2. resolve + staleness  3. availability  4. authorize (no input)
//! 5. effective input      6. invoke policies + confirmation
//! 7. precondition         8. concurrency   9. execute   10. settle
//!
//! The first failing phase produces the typed error; every call, failed or
//! not, is settled by [`Call::settle`] (audit, events, result).

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;
use tracing::Instrument;

use super::{Invocation, InvocationResult, InvokeOptions};
use crate::audit::{AuditEvent, AuditKind};
use crate::canonical::{Sink, write_canonical};
use crate::component::Component;
use crate::confirmation::Binding;
use crate::context::{ActionContext, ConfirmationEvidence, Consumer, HostContext, ReadContext};
use crate::contract::{CheckedCapability, CheckedSchema, Concurrency, TypedInput};
use crate::error::{ErrorPayload, FailureReason};
use crate::policy::{self, Decision, InvokeContext, PolicyContext};
use crate::primitives::concurrency::{
    ActionQueue, Entry, QUEUE_FULL_RETRY_MS, QueueKey, QueueRefusal, Ticket,
};
use crate::procedure::{ProcedureCall, ProcedureError, Reference};
use crate::registry::{Availability, Chain, Registration, Registry};
use crate::util::contain::Contained;
use crate::{Audit, Confirmation, Effect, Kind};

mod resolve;

/// One call in flight through phases 2–10.
pub(super) struct Call<'r> {
    pub(super) registry: &'r Registry,
    pub(super) request: Invocation,
    /// The agent's input, taken out of the request (consumed by phase 5).
    pub(super) input: std::sync::Mutex<Option<Value>>,
    pub(super) options: InvokeOptions,
    pub(super) consumer: Consumer,
    pub(super) consumer_key: Arc<str>,
    pub(super) invocation_id: Arc<str>,
    pub(super) capability_id: Arc<str>,
    /// The kinds the caller's verb admits.
    pub(super) expect: Option<super::Expect>,
    /// The dedupe record this call leads (calls with an invocation id).
    pub(super) leadership: Option<super::Leadership<'r>>,
}

/// What a call addresses on its registration.
#[derive(Clone)]
enum Subject {
    /// A capability of the component's own contract.
    View {
        index: usize,
        capability: &'static CheckedCapability,
    },
    /// A procedure the component references.
    Domain(Arc<Reference>),
}

impl Subject {
    fn capability(&self) -> &CheckedCapability {
        match self {
            Subject::View { capability, .. } => capability,
            Subject::Domain(reference) => &reference.capability,
        }
    }

    fn chain<'a>(&'a self, registration: &'a Registration) -> Option<&'a Chain> {
        match self {
            Subject::View { index, .. } => registration.chain(*index),
            Subject::Domain(reference) => Some(&reference.chain),
        }
    }

    fn output_schema(&self) -> Option<&CheckedSchema> {
        match self {
            Subject::View { capability, .. } => capability.output_schema(),
            Subject::Domain(reference) => reference.procedure.output_schema(),
        }
    }
}

/// The resolved registration and what the call addresses on it.
struct Target {
    registration: Arc<Registration>,
    subject: Subject,
}

/// What the pipeline knows when it settles.
#[derive(Default)]
struct Trace {
    target: Option<Target>,
    effective_input: Option<Value>,
    queue_wait: Option<Duration>,
    execution: Option<Duration>,
    /// When the handler settled (the settlement time of successful calls).
    finished: Option<Instant>,
    operator: Option<String>,
    audit_annotations: Map<String, Value>,
}

/// Completes `timeout` after `started`; a timeout too large to represent
/// (`Duration::MAX` as "no timeout") never completes instead of overflowing.
async fn deadline(started: Instant, timeout: Duration) {
    match started.checked_add(timeout) {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}

/// Counts canonical bytes without producing them.
struct Counter(usize);

impl Sink for Counter {
    fn write(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }
}

fn byte_len(value: &Value) -> usize {
    let mut counter = Counter(0);
    write_canonical(value, &mut counter);
    counter.0
}

/// Turns integral floats (`3.0`) into integers so typed deserialization
/// accepts what the schema (JSON semantics) accepts.
fn normalize_integral_floats(value: &mut Value) {
    match value {
        Value::Number(number) if number.is_f64() => {
            if let Some(f) = number.as_f64() {
                #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                    *value = Value::from(f as i64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_integral_floats),
        Value::Object(map) => map.values_mut().for_each(normalize_integral_floats),
        _ => {}
    }
}

/// The caller's optional cancellation token.
#[derive(Clone, Copy)]
struct Cancelled<'a>(Option<&'a tokio_util::sync::CancellationToken>);

impl Cancelled<'_> {
    fn fired(self) -> bool {
        self.0
            .is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
    }

    async fn wait(self) {
        match self.0 {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    }
}

/// What holds a concurrency slot for the duration of the execution; its
/// drop frees the slot.
#[allow(dead_code)] // held for its `Drop`
enum Slot {
    Action(tokio::sync::OwnedSemaphorePermit),
    Observation(crate::primitives::concurrency::Admitted),
}

enum Interrupt {
    Timeout(Duration),
    Cancelled,
    Unmounted,
}

impl Interrupt {
    fn into_payload(self, capability: &CheckedCapability) -> ErrorPayload {
        match self {
            Interrupt::Timeout(after) => ErrorPayload::timeout(
                u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                capability.idempotent(),
            ),
            Interrupt::Cancelled => ErrorPayload::cancelled(),
            Interrupt::Unmounted => ErrorPayload::unmounted("mid-flight"),
        }
    }
}

impl Call<'_> {
    pub(super) async fn run(self) -> InvocationResult {
        let span = tracing::debug_span!(
            "agent_surface.invoke",
            capability = %self.capability_id,
            invocation = %self.invocation_id,
            consumer = %self.consumer_key,
        );
        let started = Instant::now();
        let version_at_start = self.registry.inner.version();
        self.registry.inner.dispatcher.emit_with(|| {
            [crate::events::SurfaceEvent::InvocationStarted {
                invocation_id: Arc::clone(&self.invocation_id),
                capability_id: Arc::clone(&self.capability_id),
                consumer_id: Arc::clone(&self.consumer_key),
            }]
        });
        let mut trace = Trace::default();
        let outcome = self.phases(&mut trace).instrument(span.clone()).await;
        let _settling = span.enter();
        self.settle(outcome, trace, started, version_at_start)
    }

    async fn phases(&self, trace: &mut Trace) -> Result<Option<Arc<Value>>, ErrorPayload> {
        let host = self.registry.inner.host();
        let target = self.resolve(&host)?;
        if let Some(expect) = self.expect {
            let observation = target.subject.capability().kind() == Kind::Observation;
            let wrong = match expect {
                super::Expect::Observation => !observation,
                super::Expect::Operation => observation,
            };
            if wrong {
                let hint = if observation {
                    "this capability is an observation; read it with surface_read"
                } else {
                    "this capability is not an observation; call it with surface_act"
                };
                return Err(ErrorPayload::invalid_input(&[crate::schema::Issue::new(
                    "/capabilityId",
                    hint,
                )]));
            }
        }
        let registration = Arc::clone(&target.registration);
        let subject = target.subject.clone();
        trace.target = Some(target);
        let capability = subject.capability();
        let component = self.availability(&registration, &subject)?;
        self.authorize(&registration, &subject, &host).await?;
        let (effective, typed) = self.effective_input(&subject)?;
        let evidence = self
            .invoke_policies(&registration, &subject, &host, &effective, trace)
            .await?;
        let output = match &subject {
            Subject::View { index, .. } => {
                let index = *index;
                trace.effective_input = Some(effective);
                let read = ReadContext::new(
                    capability.id().clone(),
                    Arc::clone(&registration.id),
                    self.consumer.clone(),
                    host,
                );
                self.precondition(component.as_ref(), index, capability, typed.as_ref(), &read)?;
                let (slot, waited) = self.concurrency(&registration, &subject).await?;
                trace.queue_wait = Some(waited);
                let output = self
                    .execute(
                        &registration,
                        index,
                        capability,
                        typed,
                        read,
                        evidence,
                        trace,
                    )
                    .await;
                drop(slot);
                output
            }
            Subject::Domain(reference) => {
                trace.effective_input = Some(effective.clone());
                let (slot, waited) = self.concurrency(&registration, &subject).await?;
                trace.queue_wait = Some(waited);
                let output = self
                    .forward(&registration, reference, effective, host, evidence, trace)
                    .await;
                drop(slot);
                output
            }
        };
        self.check_output(&subject, output?, trace)
    }

    fn policy_context<'a>(
        &'a self,
        registration: &'a Registration,
        capability: &'a CheckedCapability,
        host: &'a HostContext,
    ) -> PolicyContext<'a> {
        self.registry
            .inner
            .policy_context(registration, capability, &self.consumer, host)
    }

    fn discover(
        &self,
        registration: &Registration,
        subject: &Subject,
        host: &HostContext,
    ) -> Decision {
        let Some(chain) = subject.chain(registration) else {
            return Decision::Hide;
        };
        chain.discover(&self.policy_context(registration, subject.capability(), host))
    }

    /// Phase 3: enabled, pushed overrides and `when()`, re-evaluated now
    /// (only for a capability resolution showed to this consumer).
    fn availability(
        &self,
        registration: &Arc<Registration>,
        subject: &Subject,
    ) -> Result<Contained<Arc<dyn Component>>, ErrorPayload> {
        let _phase = tracing::trace_span!("phase", n = 3, name = "availability").entered();
        let Some(component) = registration.component() else {
            return Err(ErrorPayload::unmounted("resolve"));
        };
        let availability = match subject {
            Subject::View { index, .. } => {
                registration.availability(*index, Some(component.as_ref()))
            }
            Subject::Domain(reference) => registration.procedure_availability(reference),
        };
        // Resolution showed the capability to this consumer: unavailable
        // is now something it may learn.
        if let Availability::Unavailable(reason) = availability {
            return Err(ErrorPayload::not_available(&reason));
        }
        Ok(component)
    }

    /// Phase 4: discovery re-check, then the `on_authorize` onion. No agent
    /// input exists in this phase's context.
    async fn authorize(
        &self,
        registration: &Registration,
        subject: &Subject,
        host: &HostContext,
    ) -> Result<(), ErrorPayload> {
        let capability = subject.capability();
        let Some(chain) = subject.chain(registration) else {
            return Err(ErrorPayload::not_found());
        };
        if chain.policies.is_empty() {
            return Ok(());
        }
        let ctx = self.policy_context(registration, capability, host);
        match chain.discover(&ctx) {
            Decision::Hide => return Err(ErrorPayload::not_found()),
            Decision::Disable(reason) => return Err(ErrorPayload::not_available(&reason)),
            Decision::Expose => {}
        }
        if chain.authorize.is_empty() {
            return Ok(());
        }
        let onion = AssertUnwindFuture(policy::run_authorize(&chain.authorize, &ctx))
            .instrument(tracing::trace_span!("phase", n = 4, name = "authorize"));
        match onion.await {
            Ok(result) => result,
            Err(panic) => {
                tracing::error!(panic = %panic_message(panic.as_ref()), "a policy panicked in on_authorize; the call is refused");
                Err(ErrorPayload::not_authorized("client"))
            }
        }
    }

    /// Phase 5: parse and fully validate the effective input (for a
    /// procedure: locked fields, bindings, merge, the full schema).
    fn effective_input(
        &self,
        subject: &Subject,
    ) -> Result<(Value, Option<TypedInput>), ErrorPayload> {
        let _phase = tracing::trace_span!("phase", n = 5, name = "effective input").entered();
        let input = self
            .input
            .lock()
            .map(|mut input| input.take())
            .unwrap_or_default()
            .unwrap_or(Value::Null);
        let capability = match subject {
            Subject::Domain(reference) => return Ok((reference.effective_input(input)?, None)),
            Subject::View { capability, .. } => *capability,
        };
        if capability.kind() == Kind::Observation {
            let empty = match &input {
                Value::Null => true,
                Value::Object(map) => map.is_empty(),
                _ => false,
            };
            if !empty {
                return Err(ErrorPayload::invalid_input(&[crate::schema::Issue::new(
                    "",
                    "observations take no input; send {} or nothing",
                )]));
            }
            return Ok((Value::Object(Map::new()), None));
        }
        let mut value = match input {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let Some(schema) = capability.input_schema() else {
            return Ok((value, None));
        };
        let issues = schema.validator().validate(&value);
        if !issues.is_empty() {
            return Err(ErrorPayload::invalid_input(&issues));
        }
        // The effective input is what the handler will run with: schema
        // defaults filled in, integral floats as integers.
        schema.validator().fill_defaults(&mut value);
        normalize_integral_floats(&mut value);
        match capability.parse_input(&value) {
            Some(Ok(typed)) => Ok((value, Some(typed))),
            Some(Err(issue)) => Err(ErrorPayload::invalid_input(&[issue])),
            None => Ok((value, None)),
        }
    }

    /// Phase 6: `on_invoke` policies over the validated effective input, then
    /// the confirmation decision and evidence check. Approved evidence is
    /// only reserved here: phase 9 consumes it, an earlier failure drops the
    /// reservation and so releases it.
    async fn invoke_policies(
        &self,
        registration: &Registration,
        subject: &Subject,
        host: &HostContext,
        effective: &Value,
        trace: &mut Trace,
    ) -> Result<Option<crate::confirmation::Reservation>, ErrorPayload> {
        let capability = subject.capability();
        if capability.kind() == Kind::Observation {
            return Ok(None);
        }
        let mut escalated: Option<Option<String>> = None;
        if let Some(chain) = subject
            .chain(registration)
            .filter(|chain| !chain.invoke.is_empty())
        {
            let policy_ctx = self.policy_context(registration, capability, host);
            let ctx = InvokeContext::new(&policy_ctx, &self.invocation_id, effective);
            let outcome = AssertUnwindFuture(policy::run_invoke(&chain.invoke, &ctx))
                .instrument(tracing::trace_span!(
                    "phase",
                    n = 6,
                    name = "invoke policies"
                ))
                .await;
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(denied)) => return Err(denied),
                Err(panic) => {
                    tracing::error!(panic = %panic_message(panic.as_ref()), "a policy panicked in on_invoke; the call is refused");
                    return Err(ErrorPayload::not_authorized("client"));
                }
            }
            let effects = ctx.into_effects();
            escalated = effects
                .confirmation()
                .map(|summary| summary.map(str::to_owned));
            trace.audit_annotations = effects.audit().clone();
        }
        let required = capability.confirmation() == Confirmation::Required || escalated.is_some();
        // Evidence for a domain call may answer the backend's own demand
        // (a record of origin "server"), which the client posture does not require.
        let answers_server =
            matches!(subject, Subject::Domain(_)) && self.request.confirmation_id.is_some();
        if !required && !answers_server {
            return Ok(None);
        }
        let inner = &self.registry.inner;
        let binding = Binding {
            surface_id: &inner.surface_id,
            registration_id: &registration.id,
            capability_id: &self.capability_id,
            consumer_key: &self.consumer_key,
            effective_input: effective,
            effect: capability.effect(),
        };
        match self.request.confirmation_id.as_deref() {
            Some(confirmation_id) => inner
                .confirmations
                .redeem(self.registry, confirmation_id, &binding)
                .map(Some),
            None => {
                let reference = match subject {
                    Subject::Domain(reference) => Some(&**reference),
                    Subject::View { .. } => None,
                };
                let summary = escalated
                    .flatten()
                    .unwrap_or_else(|| summarize(capability, effective, reference));
                Err(inner
                    .confirmations
                    .request(self.registry, &binding, summary, "client"))
            }
        }
    }

    /// Phase 7: the capability's precondition over the typed input and live state.
    fn precondition(
        &self,
        component: &dyn Component,
        index: usize,
        capability: &CheckedCapability,
        typed: Option<&TypedInput>,
        read: &ReadContext,
    ) -> Result<(), ErrorPayload> {
        let _phase = tracing::trace_span!("phase", n = 7, name = "precondition").entered();
        let (true, Some(typed)) = (capability.has_precondition(), typed) else {
            return Ok(());
        };
        match catch_unwind(AssertUnwindSafe(|| {
            component.__precondition(index, typed, read)
        })) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(failure)) => Err(failure.into_payload()),
            Err(panic) => {
                tracing::error!(panic = %panic_message(panic.as_ref()), "a precondition panicked");
                Err(ErrorPayload::execution_failed(FailureReason::HandlerError))
            }
        }
    }

    /// Phase 8: an action queue slot (per group; per procedure reference),
    /// or observation admission.
    async fn concurrency(
        &self,
        registration: &Registration,
        subject: &Subject,
    ) -> Result<(Slot, Duration), ErrorPayload> {
        let capability = subject.capability();
        let inner = &self.registry.inner;
        let limits = &inner.config.limits;
        let external = Cancelled(self.options.cancellation.as_ref());
        if external.fired() {
            return Err(ErrorPayload::cancelled());
        }
        let full = || ErrorPayload::rate_limited("queue-full", Some(QUEUE_FULL_RETRY_MS));
        if capability.kind() == Kind::Observation {
            let admission_limits = crate::primitives::concurrency::AdmissionLimits {
                per_consumer: limits.max_concurrent_observations_per_consumer,
                total: limits.max_concurrent_observations_total,
                queued_per_consumer: limits.max_queued_observations_per_consumer,
            };
            return match inner.admission.enter(&self.consumer_key, admission_limits) {
                Ok(Ticket::Admitted(admitted)) => Ok((Slot::Observation(admitted), Duration::ZERO)),
                Ok(Ticket::Queued(ticket)) => {
                    let waiting_since = Instant::now();
                    tokio::select! {
                        admitted = ticket.admitted() => admitted
                            .map(|admitted| (Slot::Observation(admitted), waiting_since.elapsed()))
                            .map_err(|_| ErrorPayload::cancelled()),
                        () = external.wait() => Err(ErrorPayload::cancelled()),
                        () = inner.disposed.cancelled() => Err(ErrorPayload::cancelled()),
                    }
                }
                Err(QueueRefusal::Full) => Err(full()),
                Err(QueueRefusal::Closed) => Err(ErrorPayload::cancelled()),
            };
        }
        let concurrency = capability.concurrency();
        let depth = capability
            .queue_depth()
            .map_or(limits.action_queue_depth, |d| {
                usize::try_from(d).unwrap_or(usize::MAX)
            });
        let slots = match concurrency {
            Concurrency::Parallel(n) => usize::try_from(n).unwrap_or(1),
            _ => 1,
        };
        let queue: Arc<ActionQueue> = match subject {
            Subject::View { index, .. } => registration
                .queue(QueueKey::of(concurrency, *index), || {
                    ActionQueue::new(slots, depth)
                }),
            // One queue per (procedure, referencing registration): a view
            // action of the same component never waits behind a backend call.
            Subject::Domain(reference) => reference.queue(|| ActionQueue::new(1, depth)),
        };
        let entry = queue.enter().map_err(|_| full())?;
        match entry {
            Entry::Ready(permit) => Ok((Slot::Action(permit), Duration::ZERO)),
            Entry::Queued(waiting) => {
                let unmounted = registration.unmounted();
                if !registration.is_active() {
                    return Err(ErrorPayload::unmounted("mid-flight"));
                }
                let waiting_since = Instant::now();
                let permit = tokio::select! {
                    biased;
                    () = external.wait() => return Err(ErrorPayload::cancelled()),
                    () = inner.disposed.cancelled() => return Err(ErrorPayload::cancelled()),
                    () = unmounted.cancelled() => return Err(ErrorPayload::unmounted("mid-flight")),
                    permit = waiting.slot() => permit.map_err(|_| ErrorPayload::cancelled())?,
                };
                Ok((Slot::Action(permit), waiting_since.elapsed()))
            }
        }
    }

    /// Phase 9: run the handler against its timeout, external cancellation,
    /// unmount (except navigation) and disposal. First settle wins.
    #[allow(clippy::too_many_arguments)]
    async fn execute(
        &self,
        registration: &Arc<Registration>,
        index: usize,
        capability: &CheckedCapability,
        typed: Option<TypedInput>,
        read: ReadContext,
        evidence: Option<crate::confirmation::Reservation>,
        trace: &mut Trace,
    ) -> Result<Option<Value>, ErrorPayload> {
        let inner = &self.registry.inner;
        let limits = &inner.config.limits;
        let external = Cancelled(self.options.cancellation.as_ref());
        // Taken before the liveness check: an unmount after it fires the token.
        let unmounted = registration.unmounted();
        let Some(component) = registration
            .component()
            .filter(|_| registration.is_active())
        else {
            return Err(ErrorPayload::unmounted("mid-flight"));
        };
        if external.fired() {
            return Err(ErrorPayload::cancelled());
        }
        let timeout = self
            .options
            .timeout
            .unwrap_or_else(|| match capability.timeout_ms() {
                Some(ms) => Duration::from_millis(ms),
                None if capability.kind() == Kind::Observation => limits.observation_timeout,
                None => limits.action_timeout,
            });
        let navigation = capability.effect() == Effect::Navigation;
        // The handler runs now: the approval is used up.
        let evidence: Option<ConfirmationEvidence> = evidence
            .map(crate::confirmation::Reservation::consume)
            .transpose()?;
        // Observations are reads: settled by the registry, never signalled.
        let token =
            (capability.kind() != Kind::Observation).then(tokio_util::sync::CancellationToken::new);
        let ctx = match &token {
            Some(token) => ActionContext::new(
                read,
                Arc::clone(&self.invocation_id),
                token.clone(),
                evidence,
            ),
            None => ActionContext::for_observation(read, Arc::clone(&self.invocation_id)),
        };
        self.audit_started(trace);
        // The handler future owns a component reference and may be its last
        // owner: its drop is contained like every component destructor.
        let mut handler = Contained::new(
            "handler future",
            AssertUnwindFuture(Arc::clone(&component).__invoke(index, typed, ctx)),
        );
        drop(component);
        let started = Instant::now();
        let settled = tokio::select! {
            biased;
            outcome = &mut handler => Ok(outcome),
            () = deadline(started, timeout) => Err(Interrupt::Timeout(timeout)),
            () = external.wait() => Err(Interrupt::Cancelled),
            // Disposal unmounts everything too; it settles CANCELLED.
            () = inner.disposed.cancelled() => Err(Interrupt::Cancelled),
            () = unmounted.cancelled(), if !navigation => Err(Interrupt::Unmounted),
        };
        let finished = Instant::now();
        trace.execution = Some(finished - started);
        trace.finished = Some(finished);
        match settled {
            Ok(Ok(Ok(output))) => Ok(output),
            Ok(Ok(Err(error))) => {
                trace.operator = Some(error.operator_message());
                if navigation
                    && token
                        .as_ref()
                        .is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
                {
                    Err(ErrorPayload::cancelled())
                } else {
                    Err(error.to_payload())
                }
            }
            Ok(Err(panic)) => {
                let message = panic_message(panic.as_ref());
                tracing::error!(capability = %capability.id(), panic = %message, "a handler panicked");
                trace.operator = Some(format!("handler panicked: {message}"));
                Err(ErrorPayload::execution_failed(FailureReason::HandlerError))
            }
            Err(interrupt) => {
                if let Some(token) = &token {
                    token.cancel();
                }
                self.watch_late_settlement(handler, timeout, capability);
                Err(interrupt.into_payload(capability))
            }
        }
    }

    /// Phase 9 for a procedure: forward the validated effective input to
    /// the installed executor, against the same timeout, cancellation,
    /// unmount and disposal rules as a handler. Backend errors go through
    /// the host's mapping hook; unmapped ones settle `EXECUTION_FAILED
    /// {reason: "transport"}`; an approval demand becomes a pending
    /// confirmation of origin `server`.
    async fn forward(
        &self,
        registration: &Arc<Registration>,
        reference: &Reference,
        input: Value,
        host: HostContext,
        evidence: Option<crate::confirmation::Reservation>,
        trace: &mut Trace,
    ) -> Result<Option<Value>, ErrorPayload> {
        let inner = &self.registry.inner;
        let capability = &reference.capability;
        let external = Cancelled(self.options.cancellation.as_ref());
        let unmounted = registration.unmounted();
        if !registration.is_active() {
            return Err(ErrorPayload::unmounted("mid-flight"));
        }
        if external.fired() {
            return Err(ErrorPayload::cancelled());
        }
        // Removed since resolution: nothing can run the call.
        let Some(executor) = inner.executor() else {
            return Err(ErrorPayload::not_found());
        };
        let timeout = self.options.timeout.unwrap_or_else(|| {
            capability
                .timeout_ms()
                .map_or(inner.config.limits.procedure_timeout, Duration::from_millis)
        });
        // The backend is called now: the approval is used up.
        let evidence: Option<ConfirmationEvidence> = evidence
            .map(crate::confirmation::Reservation::consume)
            .transpose()?;
        let token = tokio_util::sync::CancellationToken::new();
        let call = ProcedureCall {
            procedure_id: Arc::clone(&self.capability_id),
            input,
            invocation_id: Arc::clone(&self.invocation_id),
            consumer: self.consumer.clone(),
            host,
            evidence,
            cancellation: token.clone(),
            timeout,
        };
        self.audit_started(trace);
        let execution = catch_unwind(AssertUnwindSafe(|| executor.execute(call)));
        let Ok(future) = execution else {
            trace.operator = Some("the procedure executor panicked".to_owned());
            return Err(ErrorPayload::execution_failed(FailureReason::HandlerError));
        };
        let mut future = Contained::new("procedure future", AssertUnwindFuture(future));
        let started = Instant::now();
        let settled = tokio::select! {
            biased;
            outcome = &mut future => Ok(outcome),
            () = deadline(started, timeout) => Err(Interrupt::Timeout(timeout)),
            () = external.wait() => Err(Interrupt::Cancelled),
            () = inner.disposed.cancelled() => Err(Interrupt::Cancelled),
            () = unmounted.cancelled() => Err(Interrupt::Unmounted),
        };
        let finished = Instant::now();
        trace.execution = Some(finished - started);
        trace.finished = Some(finished);
        match settled {
            Ok(Ok(Ok(Value::Null))) => Ok(None),
            Ok(Ok(Ok(output))) => Ok(Some(output)),
            Ok(Ok(Err(error))) => {
                trace.operator = Some(error.to_string());
                Err(self.map_procedure_error(registration, reference, error, trace))
            }
            Ok(Err(panic)) => {
                let message = panic_message(panic.as_ref());
                tracing::error!(procedure = %capability.id(), panic = %message, "a procedure executor panicked");
                trace.operator = Some(format!("executor panicked: {message}"));
                Err(ErrorPayload::execution_failed(FailureReason::HandlerError))
            }
            Err(interrupt) => {
                token.cancel();
                self.watch_late_settlement(future, timeout, capability);
                Err(interrupt.into_payload(capability))
            }
        }
    }

    /// Phase 9 begins: the `invocation-started` audit record (identity only,
    /// at the capability's audit level), once, before the handler or the
    /// executor runs.
    fn audit_started(&self, trace: &Trace) {
        let Some(target) = &trace.target else {
            return;
        };
        if target.subject.capability().audit() == Audit::None {
            return;
        }
        let inner = &self.registry.inner;
        let mut event = AuditEvent::new(AuditKind::InvocationStarted, inner.now_ms());
        event.capability_id = Some(Arc::clone(&self.capability_id));
        event.registration_id = Some(Arc::clone(&target.registration.id));
        event.invocation_id = Some(Arc::clone(&self.invocation_id));
        event.consumer_id = Some(Arc::clone(&self.consumer_key));
        inner.record(&event);
        if let Some(chain) = target.subject.chain(&target.registration) {
            for sink in chain.audit_sinks.iter() {
                crate::audit::record(sink.as_ref(), &event);
            }
        }
    }

    /// A backend error as the agent sees it.
    fn map_procedure_error(
        &self,
        registration: &Registration,
        reference: &Reference,
        error: ProcedureError,
        trace: &Trace,
    ) -> ErrorPayload {
        let inner = &self.registry.inner;
        match error {
            ProcedureError::Cancelled => ErrorPayload::cancelled(),
            ProcedureError::ApprovalRequired { summary } => {
                let Some(effective) = trace.effective_input.as_ref() else {
                    return ErrorPayload::execution_failed(FailureReason::Transport);
                };
                let binding = Binding {
                    surface_id: &inner.surface_id,
                    registration_id: &registration.id,
                    capability_id: &self.capability_id,
                    consumer_key: &self.consumer_key,
                    effective_input: effective,
                    effect: reference.capability.effect(),
                };
                let summary = summary
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| s.chars().take(300).collect())
                    .unwrap_or_else(|| {
                        summarize(&reference.capability, effective, Some(reference))
                    });
                inner
                    .confirmations
                    .request(self.registry, &binding, summary, "server")
            }
            error => {
                let mapped = inner.config.procedure_errors.as_ref().and_then(|map| {
                    catch_unwind(AssertUnwindSafe(|| map(&self.capability_id, &error)))
                        .unwrap_or_else(|_| {
                            tracing::error!(
                                "the procedure error hook panicked; the error stays unmapped"
                            );
                            None
                        })
                });
                mapped.unwrap_or_else(|| ErrorPayload::execution_failed(FailureReason::Transport))
            }
        }
    }

    /// The invocation already settled; give the cancelled handler a grace
    /// period to finish and record a late settlement if it does. It is
    /// dropped afterwards: no handler outlives its grace.
    fn watch_late_settlement<F, T, E>(
        &self,
        handler: Contained<AssertUnwindFuture<F>>,
        grace: Duration,
        capability: &CheckedCapability,
    ) where
        F: Future<Output = Result<T, E>> + Unpin + Send + 'static,
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak = Arc::downgrade(&self.registry.inner);
        let invocation_id = Arc::clone(&self.invocation_id);
        let capability_id = Arc::clone(capability.id().as_arc());
        runtime.spawn(async move {
            if let Ok(outcome) = tokio::time::timeout(grace, handler).await
                && let Some(inner) = weak.upgrade()
            {
                let mut event = AuditEvent::new(AuditKind::LateSettlement, inner.now_ms());
                event.invocation_id = Some(invocation_id);
                event.capability_id = Some(capability_id);
                event.status = Some(match outcome {
                    Ok(Ok(_)) => "ok",
                    _ => "error",
                });
                inner.record(&event);
                tracing::warn!(
                    "a handler settled after its invocation had settled; its result was ignored"
                );
            }
        });
    }

    /// Phase 10 (first half): validate and size-check the output.
    fn check_output(
        &self,
        subject: &Subject,
        output: Option<Value>,
        trace: &mut Trace,
    ) -> Result<Option<Arc<Value>>, ErrorPayload> {
        let Some(output) = output else {
            return Ok(None);
        };
        // Checked iteratively before anything walks the output recursively
        // (the validator, serializers, the dedupe copy); outputs share the
        // input depth bound, as they are often sent back as inputs.
        let max_depth = self.registry.inner.config.limits.max_input_depth;
        if !super::bounds::depth_within(&output, max_depth) {
            trace.operator = Some(format!(
                "output nests deeper than {max_depth} levels of arrays and objects"
            ));
            super::bounds::dispose(output);
            return Err(ErrorPayload::execution_failed(FailureReason::OutputInvalid));
        }
        let capability = subject.capability();
        if let Some(schema) = subject.output_schema() {
            let issues = schema.validator().validate(&output);
            if !issues.is_empty() {
                let listed: Vec<String> = issues.iter().map(ToString::to_string).collect();
                trace.operator = Some(format!(
                    "output does not match its schema: {}",
                    listed.join("; ")
                ));
                if self.registry.inner.config.environment
                    == crate::context::Environment::Development
                {
                    tracing::error!(capability = %capability.id(), issues = %listed.join("; "), "handler output does not match its schema");
                }
                return Err(ErrorPayload::execution_failed(FailureReason::OutputInvalid));
            }
        }
        let size = byte_len(&output);
        if size > self.registry.inner.config.limits.max_output_bytes {
            trace.operator = Some(format!("output is {size} bytes"));
            return Err(ErrorPayload::execution_failed(
                FailureReason::OutputTooLarge,
            ));
        }
        Ok(Some(Arc::new(output)))
    }

    /// Phase 10: the result, the audit record and the settled event.
    fn settle(
        mut self,
        outcome: Result<Option<Arc<Value>>, ErrorPayload>,
        trace: Trace,
        started: Instant,
        version_at_start: u64,
    ) -> InvocationResult {
        let inner = &self.registry.inner;
        let version = inner.version();
        let result = InvocationResult::new(
            Arc::clone(&self.invocation_id),
            Arc::clone(&self.capability_id),
            outcome,
            version,
            version != version_at_start,
        );
        // The dedupe record first: no host hook below can abandon it.
        if let Some(leadership) = self.leadership.take() {
            leadership.finish(&result);
        }
        let ended = trace.finished.unwrap_or_else(Instant::now);
        let duration_ms = u64::try_from((ended - started).as_millis()).unwrap_or(u64::MAX);
        let code = result.error().map(ErrorPayload::code);
        let status = if result.is_ok() { "ok" } else { "error" };
        let level = trace
            .target
            .as_ref()
            .map_or(Audit::Metadata, |t| t.subject.capability().audit());
        if level != Audit::None {
            let mut event = AuditEvent::new(AuditKind::InvocationSettled, inner.now_ms());
            event.capability_id = Some(Arc::clone(&self.capability_id));
            event.registration_id = trace
                .target
                .as_ref()
                .map(|t| Arc::clone(&t.registration.id));
            event.invocation_id = Some(Arc::clone(&self.invocation_id));
            event.consumer_id = Some(Arc::clone(&self.consumer_key));
            event.status = Some(status);
            event.code = code;
            event.duration_ms = Some(duration_ms);
            event.queue_wait_ms = trace
                .queue_wait
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            event.execution_ms = trace
                .execution
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            let mut detail = trace.audit_annotations;
            if let Some(operator) = trace.operator {
                detail.insert("operator".to_owned(), Value::String(operator));
            }
            event.detail = (!detail.is_empty()).then_some(detail);
            if level == Audit::Full {
                event.payload =
                    Some(self.audit_payload(trace.effective_input.as_ref(), result.output()));
            }
            inner.record(&event);
            if let Some(target) = &trace.target
                && let Some(chain) = target.subject.chain(&target.registration)
            {
                for sink in chain.audit_sinks.iter() {
                    crate::audit::record(sink.as_ref(), &event);
                }
            }
        }
        inner.dispatcher.emit_with(|| {
            [crate::events::SurfaceEvent::InvocationSettled {
                invocation_id: Arc::clone(&self.invocation_id),
                capability_id: Arc::clone(&self.capability_id),
                status,
                code,
                duration_ms,
            }]
        });
        result
    }

    /// Input and output for a `full` audit record: redacted, size-capped.
    fn audit_payload(&self, input: Option<&Value>, output: Option<&Value>) -> Map<String, Value> {
        let config = &self.registry.inner.config;
        let cap = config.limits.max_audit_payload_bytes;
        let prepare = |value: &Value| -> Value {
            let value = match &config.redact {
                // A panicking redaction hook keeps nothing of the payload.
                Some(redact) => {
                    crate::util::contain::contained("audit redaction hook", || redact(value))
                        .unwrap_or_else(|| serde_json::json!({"redacted": "redaction-failed"}))
                }
                None => value.clone(),
            };
            // A redaction hook may return anything: a value too deep to walk
            // safely is dropped without recursion and kept as a marker.
            let max_depth = config.limits.max_input_depth;
            if !crate::util::nesting::depth_within(&value, max_depth) {
                crate::util::nesting::dispose(value);
                return serde_json::json!({"truncated": true, "reason": "too-deep"});
            }
            let size = byte_len(&value);
            if size > cap {
                serde_json::json!({"truncated": true, "bytes": size})
            } else {
                value
            }
        };
        let mut payload = Map::new();
        if let Some(input) = input {
            payload.insert("input".to_owned(), prepare(input));
        }
        if let Some(output) = output {
            payload.insert("output".to_owned(), prepare(output));
        }
        payload
    }
}

/// The error for a registration id that is not live: minted by another
/// registry (`surface-reloaded`), replaced by a live successor, unmounted
/// (a tombstone remembers it), or unknown.
fn dead_registration(minted_here: bool, live: Option<&str>, tombstoned: bool) -> ErrorPayload {
    if !minted_here {
        return ErrorPayload::stale("surface-reloaded", live);
    }
    match (live, tombstoned) {
        (Some(live), _) => ErrorPayload::stale("registration-replaced", Some(live)),
        (None, true) => ErrorPayload::unmounted("resolve"),
        (None, false) => ErrorPayload::not_found(),
    }
}

/// Contains panics of an async policy onion.
struct AssertUnwindFuture<F>(F);

impl<F: Future + Unpin> Future for AssertUnwindFuture<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *future).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// The default confirmation summary: the description and the effective
/// input, the values a procedure reference binds (locked) first.
fn summarize(
    capability: &CheckedCapability,
    effective: &Value,
    reference: Option<&Reference>,
) -> String {
    let bound: Vec<String> = reference
        .map(Reference::bound_fields)
        .unwrap_or_default()
        .into_iter()
        .filter(|field| field.locked)
        .map(|field| field.path.trim_start_matches('/').to_owned())
        .collect();
    let bound: Vec<&str> = bound.iter().map(String::as_str).collect();
    crate::confirmation::summary(capability.description(), effective, &bound)
}
