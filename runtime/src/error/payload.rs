//! The agent-facing error payload, `{code, message, retry, details?}`,
//! and the fixed reasons an execution fails for.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    ConfirmationInvalidReason, ErrorCode, Origin, RateLimitReason, Retry, StaleReason,
    UnmountedPhase,
};

/// Maximum length of an agent-facing message, in characters.
pub const MAX_MESSAGE: usize = 300;

/// The agent-facing error: `{code, message, retry, details?}`.
///
/// Messages are short, imperative and agent-safe; details carry only the keys
/// the error matrix allows for the code (precondition failures may add the
/// author's own agent-safe details).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorPayload {
    code: ErrorCode,
    message: Cow<'static, str>,
    retry: Retry,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) details: Option<Map<String, Value>>,
}

impl ErrorPayload {
    /// A payload with the code's default retry hint and no details.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> ErrorPayload {
        let mut message = message.into();
        if let Cow::Owned(cut) = crate::util::display_text::truncate(&message, MAX_MESSAGE) {
            message = Cow::Owned(cut);
        }
        ErrorPayload {
            code,
            message,
            retry: code.default_retry(),
            details: None,
        }
    }

    /// Sets the retry hint if the error matrix allows it for this code.
    #[must_use]
    pub fn with_retry(mut self, retry: Retry) -> ErrorPayload {
        if self.code.spec().retry.contains(&retry) {
            self.retry = retry;
        }
        self
    }

    /// Adds a detail. Keys the matrix does not list for the code are ignored,
    /// except for `PRECONDITION_FAILED`, whose details are the author's.
    #[must_use]
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> ErrorPayload {
        let allowed =
            self.code == ErrorCode::PreconditionFailed || self.code.spec().details.contains(&key);
        if allowed {
            self.details
                .get_or_insert_with(Map::new)
                .insert(key.to_owned(), value.into());
        }
        self
    }

    /// The code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The agent-safe message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The retry hint.
    pub fn retry(&self) -> Retry {
        self.retry
    }

    /// The details, if any.
    pub fn details(&self) -> Option<&Map<String, Value>> {
        self.details.as_ref()
    }

    /// One detail.
    pub fn detail(&self, key: &str) -> Option<&Value> {
        self.details.as_ref().and_then(|details| details.get(key))
    }

    /// `CAPABILITY_NOT_FOUND`, with no details: hidden and nonexistent look the same.
    pub fn not_found() -> ErrorPayload {
        ErrorPayload::new(
            ErrorCode::CapabilityNotFound,
            "This capability is not in your surface. Refresh the list of capabilities.",
        )
    }

    /// `CAPABILITY_NOT_AVAILABLE` with the same reason the descriptor shows.
    pub fn not_available(reason: &str) -> ErrorPayload {
        ErrorPayload::new(
            ErrorCode::CapabilityNotAvailable,
            format!("This capability is unavailable right now: {reason}"),
        )
        .with_detail("reason", reason)
    }

    /// `AMBIGUOUS_INSTANCE` listing the live candidates.
    pub fn ambiguous(instances: Vec<Value>) -> ErrorPayload {
        ErrorPayload::new(
            ErrorCode::AmbiguousInstance,
            "Several instances offer this capability. Name one with instanceId or registrationId.",
        )
        .with_detail("instances", instances)
    }

    /// `COMPONENT_UNMOUNTED`; `phase` is `"resolve"` or `"mid-flight"`.
    pub fn unmounted(phase: UnmountedPhase) -> ErrorPayload {
        ErrorPayload::new(
            ErrorCode::ComponentUnmounted,
            "The component offering this capability was unmounted. Refresh the list of capabilities.",
        )
        .with_detail("phase", phase.as_str())
    }

    /// `STALE_CAPABILITY` with its reason and, when known, the live registration.
    pub fn stale(reason: StaleReason, live_registration_id: Option<&str>) -> ErrorPayload {
        let payload = ErrorPayload::new(
            ErrorCode::StaleCapability,
            "Your view of this capability is out of date. Refresh the list of capabilities and retry.",
        )
        .with_detail("reason", reason.as_str());
        match live_registration_id {
            Some(live) => payload.with_detail("liveRegistrationId", live),
            None => payload,
        }
    }

    /// `INVOCATION_CONFLICT`: the id was reused for a different request.
    pub fn conflict() -> ErrorPayload {
        ErrorPayload::new(
            ErrorCode::InvocationConflict,
            "This invocation id was already used for a different request. Use a fresh invocation id.",
        )
        .with_detail("reason", "id-reused-with-different-request")
    }

    /// `INVALID_INPUT` with every issue found.
    pub fn invalid_input(issues: &[crate::schema::Issue]) -> ErrorPayload {
        let issues: Vec<Value> = issues.iter().map(crate::schema::Issue::to_json).collect();
        ErrorPayload::new(
            ErrorCode::InvalidInput,
            "The input does not match the input schema. Fix every listed issue and retry.",
        )
        .with_detail("issues", issues)
    }

    /// `NOT_AUTHENTICATED`.
    pub fn not_authenticated() -> ErrorPayload {
        ErrorPayload::new(
            ErrorCode::NotAuthenticated,
            "No user is signed in. Ask the user to sign in.",
        )
    }

    /// `NOT_AUTHORIZED`; `origin` is `"client"` or `"server"`.
    pub fn not_authorized(origin: Origin) -> ErrorPayload {
        ErrorPayload::new(
            ErrorCode::NotAuthorized,
            "The current user is not permitted to do this. Do not retry.",
        )
        .with_detail("origin", origin.as_str())
    }

    /// `PRECONDITION_FAILED` with an author-written, agent-safe message.
    pub fn precondition_failed(message: impl Into<Cow<'static, str>>) -> ErrorPayload {
        ErrorPayload::new(ErrorCode::PreconditionFailed, message)
    }

    /// `RATE_LIMITED` with its reason and, when known, when to retry.
    pub fn rate_limited(reason: RateLimitReason, retry_after_ms: Option<u64>) -> ErrorPayload {
        let payload = ErrorPayload::new(
            ErrorCode::RateLimited,
            "Too many calls right now. Wait and retry.",
        )
        .with_detail("reason", reason.as_str());
        match retry_after_ms {
            Some(ms) => payload.with_detail("retryAfterMs", ms),
            None => payload,
        }
    }

    /// `CONFIRMATION_INVALID` with its reason: only an expired confirmation
    /// may be asked for again.
    pub fn confirmation_invalid(reason: ConfirmationInvalidReason) -> ErrorPayload {
        let (message, retry) = match reason {
            ConfirmationInvalidReason::Expired => (
                "The confirmation expired. Call again without a confirmationId to ask the user again.",
                Retry::WithConfirmation,
            ),
            ConfirmationInvalidReason::Denied => {
                ("The user denied this call. Do not retry it.", Retry::No)
            }
            ConfirmationInvalidReason::Consumed => (
                "This confirmation was already used. Do not retry with it.",
                Retry::No,
            ),
            ConfirmationInvalidReason::Mismatch => (
                "The confirmation does not match this call. Do not retry with it.",
                Retry::No,
            ),
            ConfirmationInvalidReason::Withdrawn => (
                "The request was withdrawn before the user answered (the app changed). Read the \
                 current state, then call again without a confirmationId to ask anew.",
                Retry::WithConfirmation,
            ),
        };
        ErrorPayload::new(ErrorCode::ConfirmationInvalid, message)
            .with_retry(retry)
            .with_detail("reason", reason.as_str())
    }

    /// `TIMEOUT`: retry `yes` only when the capability is idempotent.
    pub fn timeout(timeout_ms: u64, idempotent: bool) -> ErrorPayload {
        ErrorPayload::new(
            ErrorCode::Timeout,
            "The operation took too long; its effects are unknown. Check the state before retrying.",
        )
        .with_retry(if idempotent { Retry::Yes } else { Retry::No })
        .with_detail("timeoutMs", timeout_ms)
        .with_detail("idempotent", idempotent)
    }

    /// `CANCELLED`.
    pub fn cancelled() -> ErrorPayload {
        ErrorPayload::new(
            ErrorCode::Cancelled,
            "The operation was cancelled. Retry with a new invocation id if it is still wanted.",
        )
    }

    /// `EXECUTION_FAILED` with reason `store-unavailable`: the registry's
    /// shared store could not be reached, so the call did not run; retry
    /// with the same invocation id after a delay.
    pub(crate) fn store_unavailable() -> ErrorPayload {
        ErrorPayload::execution_failed(FailureReason::Transient {
            reason: TransientReason::Store,
            retry_after_ms: Some(1_000),
        })
    }

    /// `EXECUTION_FAILED` from the fixed template of its reason.
    pub fn execution_failed(reason: FailureReason) -> ErrorPayload {
        let payload = ErrorPayload::new(ErrorCode::ExecutionFailed, reason.message())
            .with_detail("reason", reason.as_str());
        match reason {
            FailureReason::Transient { retry_after_ms, .. } => {
                let payload = payload
                    .with_retry(Retry::AfterDelay)
                    .with_detail("transient", true);
                match retry_after_ms {
                    Some(ms) => payload.with_detail("retryAfterMs", ms),
                    None => payload,
                }
            }
            _ => payload,
        }
    }
}

impl fmt::Display for ErrorPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Why an execution failed; each reason has a fixed agent-facing message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureReason {
    /// The handler returned an error or panicked.
    HandlerError,
    /// The output did not match its schema or was not JSON.
    OutputInvalid,
    /// The output exceeded `maxOutputBytes`.
    OutputTooLarge,
    /// The procedure transport failed in a way the host did not map.
    Transport,
    /// A failure the handler marked transient: retry after a delay.
    Transient {
        /// The underlying reason.
        reason: TransientReason,
        /// Suggested delay, if known.
        retry_after_ms: Option<u64>,
    },
}

/// The reason behind a transient failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransientReason {
    /// A handler error.
    HandlerError,
    /// A transport error.
    Transport,
    /// The shared store could not be reached: the call did not run (see
    /// [`store`](crate::store)).
    Store,
}

impl FailureReason {
    /// The `details.reason` value.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailureReason::HandlerError
            | FailureReason::Transient {
                reason: TransientReason::HandlerError,
                ..
            } => "handler-error",
            FailureReason::OutputInvalid => "output-invalid",
            FailureReason::OutputTooLarge => "output-too-large",
            FailureReason::Transport
            | FailureReason::Transient {
                reason: TransientReason::Transport,
                ..
            } => "transport",
            FailureReason::Transient {
                reason: TransientReason::Store,
                ..
            } => "store-unavailable",
        }
    }

    const fn message(self) -> &'static str {
        match self {
            FailureReason::HandlerError => "The operation failed. Do not retry it unchanged.",
            FailureReason::OutputInvalid => {
                "The operation produced an invalid result. Do not retry it unchanged."
            }
            FailureReason::OutputTooLarge => {
                "The operation's result was too large to return. Narrow the request."
            }
            FailureReason::Transport => {
                "The backend could not be reached or failed. Do not retry it unchanged."
            }
            FailureReason::Transient {
                reason: TransientReason::Store,
                ..
            } => {
                "The operation did not run: a service it needs is unavailable. Retry with the \
                 same invocation id after a delay."
            }
            FailureReason::Transient { .. } => {
                "The operation failed temporarily. Retry after a delay."
            }
        }
    }
}
