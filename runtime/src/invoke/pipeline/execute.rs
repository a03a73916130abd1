//! Phase 9: the handler (or, for a procedure, the executor) raced against
//! its timeout, external cancellation, unmount and disposal; first settle
//! wins, and a late settlement is audited, never applied.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::util::time::Instant;
use serde_json::Value;

use crate::audit::{AuditEvent, AuditKind};
use crate::component::Component;
use crate::context::{
    ActionContext, ConfirmationEvidence, Consumer, ContextParts, ContextSource, HostContext,
};
use crate::contract::{CheckedCapability, TypedInput};
use crate::error::{ErrorPayload, FailureReason};
use crate::procedure::{ProcedureCall, ProcedureError, Reference};
use crate::registry::Registration;
use crate::util::contain::{Contained, Panicked};
use agent_surface_rules::{Audit, Effect, Kind};

use super::{
    AssertUnwindFuture, Cancelled, Handed, InFlight, Interrupt, Trace, deadline, summarize,
};

impl InFlight<'_> {
    /// The one race of phase 9, for view handlers and procedure forwarding
    /// alike: the work against its timeout, the caller's cancellation,
    /// disposal (which unmounts everything and settles `CANCELLED`) and, when
    /// given, the registration's unmount. First to finish wins; the time it
    /// took since `started` is traced.
    async fn race<F: Future + Unpin>(
        &self,
        started: Instant,
        work: &mut F,
        timeout: Duration,
        unmounted: Option<&tokio_util::sync::CancellationToken>,
        trace: &mut Trace,
    ) -> Result<F::Output, Interrupt> {
        let external = Cancelled(self.options.cancellation.as_ref());
        let disposed = &self.services.disposal();
        // The work comes first (the race is biased to it): settled on its
        // first poll, the race is never built.
        let settled = match super::first_poll(work).await {
            std::task::Poll::Ready(outcome) => Ok(outcome),
            std::task::Poll::Pending => {
                Box::pin(async {
                    tokio::select! {
                        biased;
                        outcome = work => Ok(outcome),
                        () = deadline(started, timeout) => Err(Interrupt::Timeout(timeout)),
                        () = external.wait() => Err(Interrupt::Cancelled),
                        () = disposed.cancelled() => Err(Interrupt::Cancelled),
                        () = async {
                            match unmounted {
                                Some(token) => token.cancelled().await,
                                None => std::future::pending().await,
                            }
                        } => Err(Interrupt::Unmounted),
                    }
                })
                .await
            }
        };
        let finished = Instant::now();
        trace.execution = Some(finished - started);
        trace.finished = Some(finished);
        settled
    }

    /// Phase 9: run the handler against its timeout, external cancellation,
    /// unmount (except navigation) and disposal. First settle wins.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn execute(
        &self,
        registration: &Arc<Registration>,
        component: Contained<Arc<dyn Component>>,
        index: usize,
        capability: &CheckedCapability,
        typed: Option<TypedInput>,
        read: Handed,
        evidence: Option<crate::confirmation::Reservation>,
        trace: &mut Trace,
    ) -> Result<Option<Value>, ErrorPayload> {
        let inner = &self.services;
        let limits = &inner.limits();
        let external = Cancelled(self.options.cancellation.as_ref());
        let unmounted = self.still_live(registration, external)?;
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
        // An action's cancellation signal is made by the dispatch of an
        // `async` handler and handed back with its future; a synchronous
        // handler cannot be interrupted while it runs, so its context makes
        // one only if the handler asks. A navigation's is made here: its
        // handler may abort by firing it before it fails (settled
        // `CANCELLED`). Observations are reads: settled by the registry,
        // never signalled.
        let signal = navigation.then(tokio_util::sync::CancellationToken::new);
        // The context is made now only if a precondition already made its
        // read part; otherwise the dispatch makes it if the handler takes
        // one (most take none: nothing of the call is copied for them).
        let ctx = match read {
            Handed::Read(read) => ContextSource::from(match &signal {
                Some(signal) => ActionContext::new(
                    read,
                    Arc::clone(&self.invocation_id),
                    signal.clone(),
                    evidence,
                ),
                None => ActionContext::lazy(read, Arc::clone(&self.invocation_id), evidence),
            }),
            Handed::Host(host) => ContextSource::parts(ContextParts {
                capability_id: capability.id(),
                registration_id: registration.id(),
                consumer: &self.consumer,
                host,
                invocation_id: &self.invocation_id,
                signal: signal.clone(),
                evidence,
            }),
        };
        let observation = capability.kind() == Kind::Observation;
        // The handler starts now: one reading for its timing, its timeout
        // and the audit record.
        let started = Instant::now();
        self.audit_started(started);
        // A synchronous handler runs inside the dispatch (contained like a
        // poll); an async one when the race polls it. The handler future
        // owns a component reference and may be its last owner: its drop is
        // contained like every component destructor.
        let invoked =
            crate::util::contain::catch(|| Arc::clone(&component).__invoke_with(index, typed, ctx));
        let mut handler = Contained::new("handler future", Invoked::from(invoked));
        drop(component);
        // Navigation settles on its own outcome, never on unmount.
        let watched = (!navigation).then_some(unmounted);
        let settled = self
            .race(started, &mut handler, timeout, watched, trace)
            .await;
        match settled {
            Ok(Ok(Ok(output))) => Ok(output),
            Ok(Ok(Err(error))) => {
                trace.operator = Some(error.operator_message());
                if signal
                    .as_ref()
                    .is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
                {
                    Err(ErrorPayload::cancelled())
                } else {
                    Err(error.to_payload())
                }
            }
            Ok(Err(panic)) => {
                let message = panic.message;
                tracing::error!(capability = %capability.id(), panic = %message, "a handler panicked");
                trace.operator = Some(format!("handler panicked: {message}"));
                Err(ErrorPayload::execution_failed(FailureReason::HandlerError))
            }
            Err(interrupt) => {
                if let Some(token) = handler.cancellation().filter(|_| !observation) {
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
    pub(super) async fn forward(
        &self,
        registration: &Arc<Registration>,
        reference: &Reference,
        input: Value,
        host: HostContext,
        evidence: Option<crate::confirmation::Reservation>,
        trace: &mut Trace,
    ) -> Result<Option<Value>, ErrorPayload> {
        let inner = &self.services;
        let capability = &reference.capability;
        let external = Cancelled(self.options.cancellation.as_ref());
        let unmounted = self.still_live(registration, external)?;
        // Removed since resolution: nothing can run the call.
        let Some(executor) = inner.executor() else {
            return Err(ErrorPayload::not_found());
        };
        let timeout = self.options.timeout.unwrap_or_else(|| {
            capability
                .timeout_ms()
                .map_or(inner.limits().procedure_timeout, Duration::from_millis)
        });
        // The backend is called now: the approval is used up.
        let evidence: Option<ConfirmationEvidence> = evidence
            .map(crate::confirmation::Reservation::consume)
            .transpose()?;
        let token = tokio_util::sync::CancellationToken::new();
        let call = ProcedureCall {
            procedure_id: Arc::clone(self.capability_id()),
            input,
            invocation_id: Arc::clone(&self.invocation_id),
            consumer: Consumer::clone(&self.consumer),
            host,
            evidence,
            cancellation: token.clone(),
            timeout,
        };
        // The backend is called now: one reading for its timing, its
        // timeout and the audit record.
        let started = Instant::now();
        self.audit_started(started);
        let execution = crate::util::contain::catch(|| executor.execute(call));
        let Ok(future) = execution else {
            trace.operator = Some("the procedure executor panicked".to_owned());
            return Err(ErrorPayload::execution_failed(FailureReason::HandlerError));
        };
        let mut future = Contained::new("procedure future", AssertUnwindFuture(future));
        let settled = self
            .race(started, &mut future, timeout, Some(unmounted), trace)
            .await;
        match settled {
            Ok(Ok(Ok(Value::Null))) => Ok(None),
            Ok(Ok(Ok(output))) => Ok(Some(output)),
            Ok(Ok(Err(error))) => {
                trace.operator = Some(error.to_string());
                Err(self
                    .map_procedure_error(registration, reference, error, trace)
                    .await)
            }
            Ok(Err(panic)) => {
                let message = panic.message;
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
    pub(super) fn audit_started(&self, at: Instant) {
        let Some((registration, subject)) = &self.resolved else {
            return;
        };
        if subject.capability().audit() == Audit::None {
            return;
        }
        let inner = &self.services;
        let mut event = AuditEvent::new(AuditKind::InvocationStarted, inner.ms_at(at));
        event.capability_id = Some(Arc::clone(self.capability_id()));
        event.registration_id = Some(Arc::clone(registration.id()));
        event.invocation_id = Some(Arc::clone(&self.invocation_id));
        event.consumer_id = Some(Arc::clone(self.consumer.key()));
        let sinks = subject.chain(registration).map(|chain| &*chain.audit_sinks);
        inner.record_with(event, sinks);
    }

    /// A backend error as the agent sees it.
    pub(super) async fn map_procedure_error(
        &self,
        registration: &Registration,
        reference: &Reference,
        error: ProcedureError,
        trace: &Trace,
    ) -> ErrorPayload {
        let inner = &self.services;
        match error {
            ProcedureError::Cancelled => ErrorPayload::cancelled(),
            ProcedureError::ApprovalRequired { summary } => {
                let Some(effective) = trace.effective_input.as_ref() else {
                    return ErrorPayload::execution_failed(FailureReason::Transport);
                };
                let binding = self.binding(registration, effective, reference.capability.effect());
                let summary = summary
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| {
                        crate::util::display_text::truncate(
                            &s,
                            crate::confirmation::MAX_SUMMARY_CHARS,
                        )
                        .into_owned()
                    })
                    .unwrap_or_else(|| {
                        summarize(&reference.capability, effective, Some(reference))
                    });
                self.ask(&binding, &reference.capability, summary, "server")
                    .await
            }
            error => {
                let mapped = inner.config().procedure_errors.as_ref().and_then(|map| {
                    crate::util::contain::catch(|| map(self.capability_id(), &error))
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
    pub(super) fn watch_late_settlement<W, T, E>(
        &self,
        handler: Contained<W>,
        grace: Duration,
        capability: &CheckedCapability,
    ) where
        W: Future<Output = Result<Result<T, E>, Panicked>> + Unpin + Send + 'static,
    {
        if !crate::util::time::can_spawn() {
            return;
        }
        let weak = Arc::downgrade(self.services);
        let invocation_id = Arc::clone(&self.invocation_id);
        let capability_id = Arc::clone(capability.id().as_arc());
        crate::util::time::spawn(async move {
            if let Ok(outcome) = crate::util::time::timeout(grace, handler).await
                && let Some(inner) = weak.upgrade()
            {
                let mut event = AuditEvent::new(AuditKind::LateSettlement, inner.now_ms());
                event.invocation_id = Some(invocation_id);
                event.capability_id = Some(capability_id);
                event.status = Some(match outcome {
                    Ok(Ok(_)) => "ok",
                    _ => "error",
                });
                inner.record_owned(event);
                tracing::warn!(
                    "a handler settled after its invocation had settled; its result was ignored"
                );
            }
        });
    }
}

/// A handler call: its future (polled contained), or the panic its
/// dispatch raised (a synchronous handler runs there), settled on the first
/// poll like a panicking poll.
enum Invoked {
    Running(AssertUnwindFuture<crate::component::HandlerFuture>),
    Panicked(Option<Panicked>),
}

impl From<Result<crate::component::HandlerFuture, Panicked>> for Invoked {
    fn from(invoked: Result<crate::component::HandlerFuture, Panicked>) -> Invoked {
        match invoked {
            Ok(future) => Invoked::Running(AssertUnwindFuture(future)),
            Err(panic) => Invoked::Panicked(Some(panic)),
        }
    }
}

impl Invoked {
    /// The signal the registry fires when the call is interrupted (an
    /// `async` handler's; a settled one needs none).
    fn cancellation(&self) -> Option<&tokio_util::sync::CancellationToken> {
        match self {
            Invoked::Running(future) => future.0.cancellation(),
            Invoked::Panicked(_) => None,
        }
    }
}

impl Future for Invoked {
    type Output = Result<crate::component::HandlerOutcome, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut *self {
            Invoked::Running(future) => Pin::new(future).poll(cx),
            Invoked::Panicked(panic) => {
                Poll::Ready(Err(panic.take().unwrap_or_else(|| Panicked {
                    message: "a settled handler was polled again".to_owned(),
                })))
            }
        }
    }
}

impl InFlight<'_> {
    /// Phase 9's entry check: the registration still mounted and the caller
    /// not gone. The unmount token is taken before the check, so an unmount
    /// after it fires the token; the handlers are phase 3's (an unmount
    /// since then took them out of the registration and cleared `active`).
    fn still_live<'r>(
        &self,
        registration: &'r Registration,
        external: Cancelled<'_>,
    ) -> Result<&'r tokio_util::sync::CancellationToken, ErrorPayload> {
        let unmounted = registration.unmounted();
        if !registration.is_active() {
            return Err(ErrorPayload::unmounted(
                crate::error::UnmountedPhase::MidFlight,
            ));
        }
        if external.fired() {
            return Err(ErrorPayload::cancelled());
        }
        Ok(unmounted)
    }
}
