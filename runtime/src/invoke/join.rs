//! A call that joined the running twin with its invocation id: it waits
//! for the twin's result, bounded by its own time limit, so a twin that is
//! never driven to its end (a host holding its future without polling it)
//! cannot hold the joiner forever.

use std::time::Duration;

use crate::error::ErrorPayload;
use crate::ids::Plane;
use crate::invocation::{InvocationResult, InvokeOptions};
use std::sync::Arc;

use crate::registry::Services;
use agent_surface_rules::Kind;

/// How much longer than its own time limit a joiner waits: the twin, which
/// began first under the same limit, settles first whenever it can.
const GRACE: Duration = Duration::from_secs(1);

/// A call waiting for the running twin it joined.
pub(super) struct Join<'r> {
    pub(super) services: &'r Arc<Services>,
    pub(super) done: tokio::sync::watch::Receiver<Option<InvocationResult>>,
    pub(super) cancellation: Option<tokio_util::sync::CancellationToken>,
    /// When the joiner's wait ends without the twin's result (`None`: a
    /// limit too large to represent, never).
    pub(super) deadline: Option<crate::util::time::Instant>,
    /// The result when its own cancellation (or disposal) ends the wait.
    pub(super) cancelled: InvocationResult,
    /// The result when its time limit ends the wait.
    pub(super) timed_out: InvocationResult,
}

impl Join<'_> {
    /// The twin's result; the joiner's own cancellation, the registry's
    /// disposal or the joiner's time limit end its wait, and the attempt it
    /// joined runs on for its leader.
    pub(super) async fn wait(mut self) -> InvocationResult {
        let cancelled = async {
            match &self.cancellation {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let expired = async {
            match self.deadline {
                Some(at) => crate::util::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            joined = self.done.wait_for(Option::is_some) => match joined {
                Ok(result) => result.clone().unwrap_or(self.cancelled),
                Err(_) => self.cancelled,
            },
            () = cancelled => self.cancelled,
            () = self.services.disposal().cancelled() => self.cancelled,
            () = expired => self.timed_out,
        }
    }
}

/// The time limit a joiner of a call to `capability_id` waits under, and
/// whether that capability is idempotent (for the `TIMEOUT` it settles
/// with): the caller's timeout, else the capability's own, else the
/// registry's default for its kind, as the twin itself runs under. Only
/// joiners pay for this lookup.
pub(super) fn limit(
    services: &Services,
    capability_id: &str,
    parsed: Option<crate::ids::Requested>,
    options: &InvokeOptions,
) -> (Duration, bool) {
    let inner = services;
    let limits = inner.limits();
    // (timeout, kind, idempotent) of the capability, where it is mounted.
    let declared: Option<(Option<u64>, Kind, bool)> = parsed.and_then(|parsed| {
        let state = inner.state();
        match parsed.plane() {
            Plane::View => {
                let component_type = parsed.component_type(capability_id)?;
                let registration = state.of_type(component_type)?.values().next()?;
                registration
                    .contract()
                    .capabilities()
                    .iter()
                    .find(|capability| capability.id().as_str() == capability_id)
                    .map(|capability| {
                        (
                            capability.timeout_ms(),
                            capability.kind(),
                            capability.idempotent(),
                        )
                    })
            }
            Plane::Domain => {
                let holder = state.exposing(capability_id)?.first()?;
                let reference = holder.reference(capability_id)?;
                let capability = &reference.capability;
                Some((
                    Some(capability.timeout_ms().map_or(
                        crate::util::millis::millis(limits.procedure_timeout),
                        |ms| ms,
                    )),
                    capability.kind(),
                    capability.idempotent(),
                ))
            }
        }
    });
    let timeout = options.timeout.unwrap_or_else(|| match declared {
        Some((Some(ms), _, _)) => Duration::from_millis(ms),
        Some((None, Kind::Observation, _)) => limits.observation_timeout,
        _ => limits.action_timeout,
    });
    let idempotent = declared.is_some_and(|(_, _, idempotent)| idempotent);
    (timeout, idempotent)
}

/// When a joiner that began at `started` stops waiting (`None`: a limit
/// too large to represent, never).
pub(super) fn deadline(
    started: crate::util::time::Instant,
    limit: Duration,
) -> Option<crate::util::time::Instant> {
    limit
        .checked_add(GRACE)
        .and_then(|wait| started.checked_add(wait))
}

/// How long a joiner under `limit` waits for its twin.
pub(super) fn wait(limit: Duration) -> Duration {
    limit.saturating_add(GRACE)
}

/// The `TIMEOUT` a joiner settles with when its limit ends the wait.
pub(super) fn timed_out(limit: Duration, idempotent: bool) -> ErrorPayload {
    ErrorPayload::timeout(crate::util::millis::millis(limit), idempotent)
}
