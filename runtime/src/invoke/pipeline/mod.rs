//! Phases 2–10 of the invocation pipeline, in order, each its own step:
//!
//! 2. resolve + staleness  3. availability  4. authorize (no input)
//! 5. effective input      6. invoke policies + confirmation
//! 7. precondition         8. concurrency   9. execute   10. settle
//!
//! The first failing phase produces the typed error; every call, failed or
//! not, is settled by [`InFlight::settle`] (audit, events, result).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::util::time::Instant;
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::context::{Consumer, HostContext, ReadContext};
use crate::contract::{CheckedCapability, CheckedSchema};
use crate::error::ErrorPayload;
use crate::invoke::{Invocation, InvocationResult, InvokeOptions};
use crate::policy::{Decision, PolicyContext};
use crate::procedure::Reference;
use crate::registry::{Chain, Registration, Services};
use agent_surface_rules::Kind;

mod admit;
mod execute;
mod resolve;
mod settle;

/// One call in flight through phases 2–10.
pub(super) struct InFlight<'r> {
    pub(super) services: &'r Arc<Services>,
    pub(super) request: Invocation,
    /// The agent's input, taken out of the request (handed to phase 5).
    pub(super) input: Option<Value>,
    pub(super) options: InvokeOptions,
    /// Who calls: the caller's own, or the registry's anonymous consumer.
    pub(super) consumer: std::borrow::Cow<'static, Consumer>,
    pub(super) invocation_id: Arc<str>,
    /// A copy of the requested capability id, made only when a call
    /// settles before resolution (see [`capability_id`](Self::capability_id)).
    pub(super) capability_id: std::sync::OnceLock<Arc<str>>,
    /// The capability id parsed at entry (`None`: outside the grammar, so
    /// it names nothing).
    pub(super) parsed: Option<crate::ids::Requested>,
    /// The dedupe record this call leads (calls with an invocation id).
    pub(super) leadership: Option<super::Leadership>,
    /// The surface moved since the caller's version hint, on a destructive
    /// or external call that presents confirmation evidence: phase 6
    /// decides (approved evidence for this exact request stands; anything
    /// else is the version mismatch).
    pub(super) version_moved: std::sync::atomic::AtomicBool,
    /// When the call entered the pipeline.
    pub(super) started: Instant,
    /// The surface version when it entered.
    pub(super) version_at_start: u64,
    /// What resolution found, kept for a settlement by drop.
    pub(super) resolved: Option<(Arc<Registration>, Subject)>,
    /// Whether phase 10 ran (a call dropped before it settles `CANCELLED`).
    pub(super) settled: bool,
    /// The confirmation store's forget epoch when the call began.
    pub(super) forget_epoch: u64,
}

/// What a call addresses on its registration.
#[derive(Clone)]
pub(super) enum Subject {
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

/// What phase 9 gets to make the handler's context from: the read part a
/// precondition already made, or the host context alone.
enum Handed {
    Read(ReadContext),
    Host(crate::context::HostContext),
}

/// The resolved registration and what the call addresses on it.
struct Target {
    registration: Arc<Registration>,
    subject: Subject,
    /// Discovery's verdict for this consumer, taken once at resolution: a
    /// reason when a policy shows the target disabled.
    disabled: Option<std::borrow::Cow<'static, str>>,
}

/// What the pipeline knows when it settles.
#[derive(Default)]
struct Trace {
    effective_input: Option<Value>,
    queue_wait: Option<Duration>,
    execution: Option<Duration>,
    /// When the handler settled (the settlement time of successful calls).
    finished: Option<Instant>,
    operator: Option<String>,
    audit_annotations: Map<String, Value>,
    /// The output's serialized size, measured once by phase 10's size check.
    output_bytes: Option<usize>,
}

/// Completes `timeout` after `started`; a timeout too large to represent
/// (`Duration::MAX` as "no timeout") never completes instead of overflowing.
async fn deadline(started: Instant, timeout: Duration) {
    match started.checked_add(timeout) {
        Some(at) => crate::util::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Polls `work` once. Most policy onions and handlers settle on their first
/// poll; the races against timers, cancellation and unmount (large futures)
/// are then never built, and otherwise built on the heap, so a call's
/// future stays small to move.
async fn first_poll<F: Future + Unpin>(work: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *work).poll(cx))).await
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
enum Slot<'a> {
    Action(crate::primitives::concurrency::ActionPermit),
    Observation(crate::primitives::concurrency::Admitted<'a>),
}

enum Interrupt {
    Timeout(Duration),
    Cancelled,
    Unmounted,
}

impl Interrupt {
    fn into_payload(self, capability: &CheckedCapability) -> ErrorPayload {
        match self {
            Interrupt::Timeout(after) => {
                ErrorPayload::timeout(crate::util::millis::millis(after), capability.idempotent())
            }
            Interrupt::Cancelled => ErrorPayload::cancelled(),
            Interrupt::Unmounted => {
                ErrorPayload::unmounted(crate::error::UnmountedPhase::MidFlight)
            }
        }
    }
}

impl InFlight<'_> {
    /// The capability id as requested.
    pub(super) fn requested_id(&self) -> &str {
        &self.request.capability_id
    }

    /// What a confirmation of this call is bound to: this surface, this
    /// registration, this capability, this consumer, this effective input.
    fn binding<'b>(
        &'b self,
        registration: &'b Registration,
        effective_input: &'b Value,
        effect: agent_surface_rules::Effect,
    ) -> crate::confirmation::Binding<'b> {
        crate::confirmation::Binding {
            surface_id: self.services.surface_id(),
            registration_id: registration.id(),
            capability_id: self.capability_id(),
            consumer_key: self.consumer.key(),
            effective_input,
            effect,
        }
    }

    /// The capability id as results and audit records carry it: the
    /// contract's own once resolved, else a copy of the requested.
    pub(super) fn capability_id(&self) -> &Arc<str> {
        match &self.resolved {
            Some((_, subject)) => subject.capability().id().as_arc(),
            None => self
                .capability_id
                .get_or_init(|| Arc::from(self.request.capability_id.as_str())),
        }
    }

    /// Awaits `work` (a policy onion: host code that may take its time)
    /// unless the caller cancels, the registry is disposed (both settle
    /// `CANCELLED`) or the registration is unmounted (`COMPONENT_UNMOUNTED`)
    /// first, without waiting for it.
    async fn unless_cancelled<F: Future>(
        &self,
        registration: &Registration,
        work: F,
    ) -> Result<F::Output, ErrorPayload> {
        let external = Cancelled(self.options.cancellation.as_ref());
        if external.fired() {
            return Err(ErrorPayload::cancelled());
        }
        // Taken before the liveness check: an unmount after it fires it.
        let unmounted = registration.unmounted();
        if !registration.is_active() {
            return Err(ErrorPayload::unmounted(
                crate::error::UnmountedPhase::MidFlight,
            ));
        }
        let mut work = std::pin::pin!(work);
        // The work comes first (as in the race below): settled on its first
        // poll, the race is never built.
        if let Poll::Ready(output) = first_poll(&mut work).await {
            return Ok(output);
        }
        Box::pin(async {
            tokio::select! {
                biased;
                output = &mut work => Ok(output),
                () = external.wait() => Err(ErrorPayload::cancelled()),
                () = self.services.disposal().cancelled() => Err(ErrorPayload::cancelled()),
                () = unmounted.cancelled() => Err(ErrorPayload::unmounted(crate::error::UnmountedPhase::MidFlight)),
            }
        })
        .await
    }

    /// Phases 2–10. Borrowed, not owned: the call lives once, in its
    /// caller's future, and settles by drop from there if it is dropped.
    pub(super) async fn run(&mut self) -> InvocationResult {
        let span = crate::util::span::wanted_span!(
            tracing::Level::DEBUG,
            "agent_surface.invoke",
            capability = %self.requested_id(),
            invocation = %self.invocation_id,
            consumer = %self.consumer.key(),
        );
        self.services.dispatcher().emit_with(|| {
            [crate::events::SurfaceEvent::InvocationStarted {
                invocation_id: Arc::clone(&self.invocation_id),
                capability_id: Arc::clone(self.capability_id()),
                consumer_id: Arc::clone(self.consumer.key()),
            }]
        });
        let mut trace = Trace::default();
        let input = self.input.take();
        let outcome = if span.is_disabled() {
            self.phases(input, &mut trace).await
        } else {
            self.phases(input, &mut trace)
                .instrument(span.clone())
                .await
        };
        let _settling = span.enter();
        self.settle(outcome, trace)
    }

    async fn phases(
        &mut self,
        input: Option<Value>,
        trace: &mut Trace,
    ) -> Result<Option<Arc<Value>>, ErrorPayload> {
        // Cancelled before it began: settled at once, whatever it names.
        if Cancelled(self.options.cancellation.as_ref()).fired() {
            return Err(ErrorPayload::cancelled());
        }
        let host = self.services.host_for(&self.consumer);
        let Target {
            registration,
            subject,
            disabled,
        } = self.resolve(&host)?;
        // A target of a kind the caller's verb does not admit is refused
        // before the call counts as resolved (its settlement is audited
        // like an unresolved call's).
        let observation = subject.capability().kind() == Kind::Observation;
        let outside = match self.options.kinds {
            crate::invocation::Kinds::All => None,
            crate::invocation::Kinds::Observations => {
                (!observation).then_some(crate::invocation::IS_NOT_AN_OBSERVATION)
            }
            crate::invocation::Kinds::Operations => {
                observation.then_some(crate::invocation::IS_AN_OBSERVATION)
            }
        };
        if let Some(message) = outside {
            return Err(ErrorPayload::invalid_input(&[crate::schema::Issue::new(
                "/capabilityId",
                message,
            )]));
        }
        // From here on, the capability id is the contract's own (equal to
        // the requested): no copy. The call keeps what it resolved (its
        // settlement reads it, even by drop); the phases borrow it.
        self.resolved = Some((registration, subject));
        let this = &*self;
        let Some((registration, subject)) = &this.resolved else {
            return Err(ErrorPayload::not_found());
        };
        let capability = subject.capability();
        let component = this.availability(registration, subject)?;
        this.authorize(registration, subject, &host, disabled)
            .await?;
        let (effective, typed) = this.effective_input(subject, input)?;
        let evidence = this
            .invoke_policies(registration, subject, &host, &effective, trace)
            .await?;
        let output = match subject {
            Subject::View { index, .. } => {
                let index = *index;
                trace.effective_input = Some(effective);
                // The handler's context is made here only for a precondition;
                // otherwise only if the handler takes one (see `execute`).
                let read = if capability.has_precondition() && typed.is_some() {
                    let read = ReadContext::new(
                        capability.id().clone(),
                        Arc::clone(registration.id()),
                        Consumer::clone(&this.consumer),
                        host,
                    );
                    this.precondition(
                        component.as_ref(),
                        index,
                        capability,
                        typed.as_ref(),
                        &read,
                    )?;
                    Handed::Read(read)
                } else {
                    Handed::Host(host)
                };
                let (slot, waited) = this.concurrency(registration, subject).await?;
                trace.queue_wait = Some(waited);
                let output = this
                    .execute(
                        registration,
                        component,
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
                let (slot, waited) = this.concurrency(registration, subject).await?;
                trace.queue_wait = Some(waited);
                let output = this
                    .forward(registration, reference, effective, host, evidence, trace)
                    .await;
                drop(slot);
                output
            }
        };
        this.check_output(subject, output?, trace)
    }

    fn policy_context<'a>(
        &'a self,
        registration: &'a Registration,
        capability: &'a CheckedCapability,
        host: &'a HostContext,
    ) -> PolicyContext<'a> {
        self.services
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
}

impl InFlight<'_> {
    /// The call ends without running here, with `error` (the shared store
    /// refused it, failed, or the twin on another replica did not settle
    /// in time): this process's dedupe record is given back, so a retry is
    /// a new attempt, and nothing is audited (nothing ran).
    pub(in crate::invoke) fn answered_elsewhere(mut self, error: ErrorPayload) -> InvocationResult {
        self.settled = true;
        if let Some(leadership) = self.leadership.take() {
            leadership.abandon(
                self.services,
                crate::primitives::dedupe::KeyRef(self.consumer.key(), &self.invocation_id),
            );
        }
        InvocationResult::new(
            Arc::clone(&self.invocation_id),
            Arc::clone(self.capability_id()),
            Err(error),
            self.services.version(),
            false,
        )
    }

    /// The call ends with `result`, its twin's on another replica (which
    /// audited it): this process's dedupe record keeps it as its own, and
    /// joiners here get it.
    pub(in crate::invoke) fn answered_elsewhere_with(
        mut self,
        result: InvocationResult,
    ) -> InvocationResult {
        self.settled = true;
        if let Some(leadership) = self.leadership.take() {
            let now = self.services.ms_at(crate::util::time::Instant::now());
            leadership.finish(
                self.services,
                crate::primitives::dedupe::KeyRef(self.consumer.key(), &self.invocation_id),
                &result,
                None,
                now,
            );
        }
        result
    }
}

impl Drop for InFlight<'_> {
    /// The caller dropped the call's future (or aborted its task) before it
    /// settled: the call settles `CANCELLED` here, a terminal result like
    /// any other — kept for its invocation id (a retry with the same id gets
    /// it, never a second run), handed to joiners, audited and announced.
    fn drop(&mut self) {
        if !self.settled {
            // The settlement reads what resolution found from the call
            // itself. Contained: a panic here must still give the dedupe
            // record back below.
            let trace = Trace {
                operator: Some("the caller dropped the call before it settled".to_owned()),
                ..Trace::default()
            };
            let _ =
                crate::util::contain::catch(|| self.settle(Err(ErrorPayload::cancelled()), trace));
        }
        // A record no settlement finished (one that unwound before it
        // could) is given back, so joiners do not wait forever.
        if let Some(leadership) = self.leadership.take() {
            leadership.abandon(
                self.services,
                crate::primitives::dedupe::KeyRef(self.consumer.key(), &self.invocation_id),
            );
        }
    }
}

/// The error for a registration id that is not live: minted by another
/// registry (`surface-reloaded`), replaced by a live successor, unmounted
/// (a tombstone remembers it), or unknown.
fn dead_registration(minted_here: bool, live: Option<&str>, tombstoned: bool) -> ErrorPayload {
    if !minted_here {
        return ErrorPayload::stale(crate::error::StaleReason::SurfaceReloaded, live);
    }
    match (live, tombstoned) {
        (Some(live), _) => {
            ErrorPayload::stale(crate::error::StaleReason::RegistrationReplaced, Some(live))
        }
        (None, true) => ErrorPayload::unmounted(crate::error::UnmountedPhase::Resolve),
        (None, false) => ErrorPayload::not_found(),
    }
}

/// Contains panics of an async policy onion (or a handler).
struct AssertUnwindFuture<F>(F);

impl<F: Future + Unpin> Future for AssertUnwindFuture<F> {
    type Output = Result<F::Output, crate::util::contain::Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.0;
        match crate::util::contain::catch(|| Pin::new(&mut *future).poll(cx)) {
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

impl InFlight<'_> {
    /// Asks the person: a new (or the identical pending) confirmation for
    /// `binding`, presented in the person's terms by the host's presenter
    /// (contained: a panic or `None` presents the description) and naming
    /// who asks. The presenter runs before the store's lock is taken, and
    /// so does the claim of the request's place in its principal's share
    /// across replicas (with a shared store).
    async fn ask(
        &self,
        binding: &crate::confirmation::Binding<'_>,
        capability: &CheckedCapability,
        summary: String,
        origin: &'static str,
    ) -> ErrorPayload {
        let inner = &self.services;
        // Asked again while the person reads: the same request, not
        // presented (host code) anew.
        let live = || {
            self.resolved
                .as_ref()
                .is_some_and(|(registration, _)| registration.is_active())
        };
        if let Some(pending) = inner.confirmations().already_pending(binding, live) {
            return pending;
        }
        let requester = self.consumer.label().map(|label| {
            Arc::from(crate::util::display_text::truncate(
                &crate::util::display_text::escape(label),
                MAX_REQUESTER_CHARS,
            ))
        });
        let description = capability.description();
        let request = crate::confirmation::PresentationRequest {
            capability_id: binding.capability_id,
            description,
            effect: binding.effect,
            input: binding.effective_input,
            requester: requester.as_deref(),
        };
        let presented = inner.config().presenter.as_ref().and_then(|present| {
            crate::util::contain::catch(|| present(&request)).unwrap_or_else(|panic| {
                tracing::error!(panic = %panic.message, "the confirmation presenter panicked; the description is presented");
                None
            })
        });
        let presentation = presented
            .unwrap_or_else(|| {
                crate::confirmation::Presentation::fallback(description, binding.effect)
            })
            .sanitized(description);
        let share = Arc::clone(self.consumer.principal());
        let place = match crate::confirmation::Place::claim(&***inner, &share).await {
            Ok(place) => place,
            Err(unavailable) => return unavailable,
        };
        inner.confirmations().request(
            inner,
            binding,
            crate::confirmation::Ask {
                summary,
                origin,
                presentation,
                requester,
                since_epoch: self.forget_epoch,
                share,
                place,
            },
            live,
        )
    }
}

/// Longest requester label shown to the person, in characters.
const MAX_REQUESTER_CHARS: usize = 80;
