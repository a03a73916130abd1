//! Phases 3–8: availability, authorization (no input), the effective
//! input, `on_invoke` policies with confirmation, the precondition, and an
//! action queue slot or observation admission.

use std::sync::Arc;
use std::time::Duration;

use crate::util::time::Instant;
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::component::Component;
use crate::context::{HostContext, ReadContext};
use crate::contract::{CheckedCapability, Concurrency, TypedInput};
use crate::error::{ErrorPayload, FailureReason};
use crate::policy::{self, InvokeContext};
use crate::primitives::concurrency::{
    ActionQueue, QUEUE_FULL_RETRY_MS, QueueEntry, QueueKey, QueueRefusal, Ticket,
};
use crate::registry::{Availability, Registration};
use crate::util::contain::Contained;
use agent_surface_rules::{Confirmation, Kind};

use super::{
    AssertUnwindFuture, Cancelled, InFlight, Slot, Subject, Trace, normalize_integral_floats,
    summarize,
};

impl InFlight<'_> {
    /// Phase 3: enabled, pushed overrides and `when()`, re-evaluated now
    /// (only for a capability resolution showed to this consumer).
    pub(super) fn availability(
        &self,
        registration: &Arc<Registration>,
        subject: &Subject,
    ) -> Result<Contained<Arc<dyn Component>>, ErrorPayload> {
        let _phase = crate::util::span::phase_span!(3, "availability").entered();
        let Some(component) = registration.component() else {
            return Err(ErrorPayload::unmounted(
                crate::error::UnmountedPhase::Resolve,
            ));
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
            // An unmount that raced the check (a released reference reads
            // as unavailable) is told as what it is.
            if !registration.is_active() {
                return Err(ErrorPayload::unmounted(
                    crate::error::UnmountedPhase::MidFlight,
                ));
            }
            return Err(ErrorPayload::not_available(&reason));
        }
        Ok(component)
    }

    /// Phase 4: discovery's verdict (taken at resolution), then the
    /// `on_authorize` onion. No agent input exists in this phase's context.
    pub(super) async fn authorize(
        &self,
        registration: &Registration,
        subject: &Subject,
        host: &HostContext,
        disabled: Option<std::borrow::Cow<'static, str>>,
    ) -> Result<(), ErrorPayload> {
        let capability = subject.capability();
        let Some(chain) = subject.chain(registration) else {
            return Err(ErrorPayload::not_found());
        };
        // Discovery ran once, at resolution (a hidden target never got
        // here); a policy that shows it disabled refuses now.
        if let Some(reason) = disabled {
            return Err(ErrorPayload::not_available(&reason));
        }
        if chain.authorize.is_empty() {
            return Ok(());
        }
        let ctx = self.policy_context(registration, capability, host);
        let onion = AssertUnwindFuture(policy::run_authorize(&chain.authorize, &ctx))
            .instrument(crate::util::span::phase_span!(4, "authorize"));
        match self.unless_cancelled(registration, onion).await? {
            Ok(result) => result,
            Err(panic) => {
                tracing::error!(panic = %panic.message, "a policy panicked in on_authorize; the call is refused");
                Err(ErrorPayload::not_authorized(crate::error::Origin::Client))
            }
        }
    }

    /// Phase 5: parse and fully validate the effective input (for a
    /// procedure: locked fields, bindings, merge, the full schema).
    pub(super) fn effective_input(
        &self,
        subject: &Subject,
        input: Option<Value>,
    ) -> Result<(Value, Option<TypedInput>), ErrorPayload> {
        let _phase = crate::util::span::phase_span!(5, "effective input").entered();
        let input = input.unwrap_or(Value::Null);
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
    pub(super) async fn invoke_policies(
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
                .instrument(crate::util::span::phase_span!(6, "invoke policies"));
            let outcome = self.unless_cancelled(registration, outcome).await?;
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(denied)) => return Err(denied),
                Err(panic) => {
                    tracing::error!(panic = %panic.message, "a policy panicked in on_invoke; the call is refused");
                    return Err(ErrorPayload::not_authorized(crate::error::Origin::Client));
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
        let version_moved = self
            .version_moved
            .load(std::sync::atomic::Ordering::Relaxed);
        let stale = || {
            ErrorPayload::stale(
                crate::error::StaleReason::SurfaceVersionMismatch,
                Some(registration.id()),
            )
        };
        if !required && !answers_server {
            return if version_moved {
                Err(stale())
            } else {
                Ok(None)
            };
        }
        // Cancelled by now: nothing is asked of the person, nothing reserved.
        if Cancelled(self.options.cancellation.as_ref()).fired() {
            return Err(ErrorPayload::cancelled());
        }
        let inner = &self.services;
        let binding = self.binding(registration, effective, capability.effect());
        match self.request.confirmation_id.as_deref() {
            Some(confirmation_id) => {
                let redeemed = inner
                    .confirmations()
                    .redeem(self.services, confirmation_id, &binding)
                    .await;
                match redeemed {
                    Ok(reservation) => Ok(Some(reservation)),
                    // The surface moved and this is no approval of this
                    // exact request: the version mismatch stands.
                    Err(_) if version_moved => Err(stale()),
                    Err(refused) => Err(refused),
                }
            }
            None => {
                let reference = match subject {
                    Subject::Domain(reference) => Some(&**reference),
                    Subject::View { .. } => None,
                };
                let summary = escalated
                    .flatten()
                    .unwrap_or_else(|| summarize(capability, effective, reference));
                Err(self.ask(&binding, capability, summary, "client").await)
            }
        }
    }

    /// Phase 7: the capability's precondition over the typed input and live state.
    pub(super) fn precondition(
        &self,
        component: &dyn Component,
        index: usize,
        capability: &CheckedCapability,
        typed: Option<&TypedInput>,
        read: &ReadContext,
    ) -> Result<(), ErrorPayload> {
        let _phase = crate::util::span::phase_span!(7, "precondition").entered();
        let (true, Some(typed)) = (capability.has_precondition(), typed) else {
            return Ok(());
        };
        match crate::util::contain::catch(|| component.__precondition(index, typed, read)) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(failure)) => Err(failure.into_payload()),
            Err(panic) => {
                tracing::error!(panic = %panic.message, "a precondition panicked");
                Err(ErrorPayload::execution_failed(FailureReason::HandlerError))
            }
        }
    }

    /// Phase 8: an action queue slot (per group; per procedure reference),
    /// or observation admission.
    pub(super) async fn concurrency(
        &self,
        registration: &Registration,
        subject: &Subject,
    ) -> Result<(Slot<'_>, Duration), ErrorPayload> {
        let capability = subject.capability();
        let inner = &self.services;
        let limits = &inner.limits();
        let external = Cancelled(self.options.cancellation.as_ref());
        if external.fired() {
            return Err(ErrorPayload::cancelled());
        }
        let full = || {
            ErrorPayload::rate_limited(
                crate::error::RateLimitReason::QueueFull,
                Some(QUEUE_FULL_RETRY_MS),
            )
        };
        if capability.kind() == Kind::Observation {
            let admission_limits = crate::primitives::concurrency::AdmissionLimits {
                per_consumer: limits.max_concurrent_observations_per_consumer,
                total: limits.max_concurrent_observations_total,
                queued_per_consumer: limits.max_queued_observations_per_consumer,
            };
            return match inner
                .admission()
                .enter(self.consumer.principal(), admission_limits)
            {
                Ok(Ticket::Admitted(admitted)) => Ok((Slot::Observation(admitted), Duration::ZERO)),
                Ok(Ticket::Queued(ticket)) => {
                    // Waiting is the rare path: its futures live on the heap.
                    let waiting_since = Instant::now();
                    Box::pin(async {
                        tokio::select! {
                            admitted = ticket.admitted() => admitted
                                .map(|admitted| (Slot::Observation(admitted), waiting_since.elapsed()))
                                .map_err(|_| ErrorPayload::cancelled()),
                            () = external.wait() => Err(ErrorPayload::cancelled()),
                            () = inner.disposal().cancelled() => Err(ErrorPayload::cancelled()),
                        }
                    })
                    .await
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
            QueueEntry::Ready(permit) => Ok((Slot::Action(permit), Duration::ZERO)),
            QueueEntry::Queued(waiting) => {
                let unmounted = registration.unmounted();
                if !registration.is_active() {
                    return Err(ErrorPayload::unmounted(
                        crate::error::UnmountedPhase::MidFlight,
                    ));
                }
                // Waiting is the rare path: its futures live on the heap.
                let waiting_since = Instant::now();
                let permit = Box::pin(async {
                    tokio::select! {
                        biased;
                        () = external.wait() => Err(ErrorPayload::cancelled()),
                        () = inner.disposal().cancelled() => Err(ErrorPayload::cancelled()),
                        () = unmounted.cancelled() => Err(ErrorPayload::unmounted(crate::error::UnmountedPhase::MidFlight)),
                        permit = waiting.slot() => permit.map_err(|_| ErrorPayload::cancelled()),
                    }
                })
                .await?;
                Ok((Slot::Action(permit), waiting_since.elapsed()))
            }
        }
    }
}
