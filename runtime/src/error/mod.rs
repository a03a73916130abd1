//! Errors, in three families that never mix:
//!
//! - [`ErrorPayload`]: the closed, agent-facing error set. Every failed
//!   invocation settles with one; it serializes exactly to
//!   `{code, message, retry, details?}` and carries no operator detail.
//!   [`ErrorCode::spec`] is the one table of retry hints, cacheability,
//!   producing phases and detail keys.
//! - [`DefinitionError`]: structural defects of an authored contract, raised
//!   at compile time by the macros and again at registration, never shown to
//!   an agent.
//! - [`ActionError`]: what a handler returns when it fails. The pipeline turns
//!   it into an [`ErrorPayload`] from a fixed template; the handler's own
//!   error text goes to the operator channel (audit, `tracing`) only.
//!
//! # Example
//! ```
//! use agent_surface::error::{ErrorCode, ErrorPayload, Retry};
//! use serde_json::json;
//!
//! let payload = ErrorPayload::not_available("Select at least one device first");
//! assert_eq!(payload.retry(), Retry::AfterRefresh);
//! assert_eq!(
//!     serde_json::to_value(&payload)?,
//!     json!({
//!         "code": "CAPABILITY_NOT_AVAILABLE",
//!         "message": "This capability is unavailable right now: Select at least one device first",
//!         "retry": "after-refresh",
//!         "details": {"reason": "Select at least one device first"}
//!     })
//! );
//! assert!(!ErrorCode::ConfirmationRequired.spec().cacheable);
//! # Ok::<(), serde_json::Error>(())
//! ```

mod reasons;

pub use reasons::{Origin, RateLimitReason, StaleReason, UnmountedPhase};

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The closed set of agent-facing error codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// Not in this consumer's surface: never registered, long gone, or hidden.
    CapabilityNotFound,
    /// Visible but disabled right now.
    CapabilityNotAvailable,
    /// More than one live instance or reference, and none was named.
    AmbiguousInstance,
    /// The component was unmounted (tombstone hit, or mid-flight).
    ComponentUnmounted,
    /// The caller's staleness token no longer matches the live surface.
    StaleCapability,
    /// The same invocation id was reused for a different request.
    InvocationConflict,
    /// The input does not match the schema, or a locked field was supplied.
    InvalidInput,
    /// No authenticated context.
    NotAuthenticated,
    /// Authenticated but not permitted.
    NotAuthorized,
    /// The input is valid but the current state does not allow the call.
    PreconditionFailed,
    /// The user must approve the call first (a protocol step, not a failure).
    ConfirmationRequired,
    /// The confirmation evidence was rejected.
    ConfirmationInvalid,
    /// An advisory rate limit or a full queue.
    RateLimited,
    /// The handler exceeded its time budget; its side effects are unknown.
    Timeout,
    /// The host or adapter cancelled the call, or the registry was disposed.
    Cancelled,
    /// The handler failed, or its output was invalid.
    ExecutionFailed,
}

/// What the agent should do after an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retry {
    /// Do not retry.
    No,
    /// Retry as is (with a new invocation id where the error says so).
    Yes,
    /// Re-read the surface (snapshot / tool list) first.
    AfterRefresh,
    /// Wait (see `retryAfterMs` when present).
    AfterDelay,
    /// Retry with the confirmation id once the user approved.
    WithConfirmation,
    /// Change the request (input, instance, invocation id) first.
    WithChanges,
}

impl Retry {
    /// The hint's kebab-case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Retry::No => "no",
            Retry::Yes => "yes",
            Retry::AfterRefresh => "after-refresh",
            Retry::AfterDelay => "after-delay",
            Retry::WithConfirmation => "with-confirmation",
            Retry::WithChanges => "with-changes",
        }
    }
}

/// One row of the error matrix: how a code behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeSpec {
    /// The code this row describes.
    pub code: ErrorCode,
    /// Pipeline phases (1–10) that may produce the code.
    pub phases: &'static [u8],
    /// Allowed retry hints; the first is the default.
    pub retry: &'static [Retry],
    /// Whether a terminal result with this code is cached in the dedupe window.
    pub cacheable: bool,
    /// Agent-safe detail keys the payload may carry.
    pub details: &'static [&'static str],
}

const fn row(
    code: ErrorCode,
    phases: &'static [u8],
    retry: &'static [Retry],
    cacheable: bool,
    details: &'static [&'static str],
) -> CodeSpec {
    CodeSpec {
        code,
        phases,
        retry,
        cacheable,
        details,
    }
}

/// The error matrix: the single source of retry hints, cacheability, phases
/// and detail keys, in [`ErrorCode::ALL`] order.
const MATRIX: [CodeSpec; 16] = {
    use ErrorCode as C;
    use Retry as R;
    [
        row(
            C::CapabilityNotFound,
            &[2, 4],
            &[R::AfterRefresh],
            true,
            &[],
        ),
        row(
            C::CapabilityNotAvailable,
            &[3, 4],
            &[R::AfterRefresh],
            true,
            &["reason"],
        ),
        row(
            C::AmbiguousInstance,
            &[2],
            &[R::WithChanges],
            true,
            &["instances"],
        ),
        row(
            C::ComponentUnmounted,
            &[2, 9],
            &[R::AfterRefresh],
            true,
            &["phase"],
        ),
        row(
            C::StaleCapability,
            &[2],
            &[R::AfterRefresh],
            true,
            &["reason", "liveRegistrationId"],
        ),
        row(
            C::InvocationConflict,
            &[1],
            &[R::WithChanges],
            false,
            &["reason"],
        ),
        row(
            C::InvalidInput,
            &[5],
            &[R::WithChanges],
            true,
            &["issues", "lockedFields"],
        ),
        row(C::NotAuthenticated, &[4], &[R::No], true, &[]),
        row(C::NotAuthorized, &[4, 9], &[R::No], true, &["origin"]),
        row(
            C::PreconditionFailed,
            &[5, 7],
            &[R::WithChanges, R::AfterRefresh],
            true,
            &["reason"],
        ),
        row(
            C::ConfirmationRequired,
            &[6],
            &[R::WithConfirmation],
            false,
            &["confirmationId", "summary", "expiresAt", "effect", "origin"],
        ),
        row(
            C::ConfirmationInvalid,
            &[6],
            &[R::No, R::WithConfirmation],
            true,
            &["reason"],
        ),
        row(
            C::RateLimited,
            &[4, 6, 8],
            &[R::AfterDelay],
            false,
            &["reason", "retryAfterMs"],
        ),
        row(
            C::Timeout,
            &[9],
            &[R::No, R::Yes],
            true,
            &["timeoutMs", "idempotent"],
        ),
        row(C::Cancelled, &[8, 9], &[R::Yes, R::No], true, &[]),
        row(
            C::ExecutionFailed,
            &[9, 10],
            &[R::No, R::AfterDelay],
            true,
            &["reason", "transient", "retryAfterMs"],
        ),
    ]
};

impl ErrorCode {
    /// Every code, in the order of the specification's error table.
    #[allow(clippy::indexing_slicing)] // const evaluation checks the bounds
    pub const ALL: [ErrorCode; 16] = {
        let mut all = [ErrorCode::CapabilityNotFound; 16];
        let mut index = 0;
        while index < 16 {
            all[index] = MATRIX[index].code;
            index += 1;
        }
        all
    };

    /// The code's row of the error matrix.
    #[allow(clippy::indexing_slicing)] // one row per variant, asserted at compile time below
    pub const fn spec(self) -> &'static CodeSpec {
        // MATRIX is declared in enum order; the const assertion below keeps it so.
        &MATRIX[self as usize]
    }

    /// The SCREAMING_SNAKE name, as on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::CapabilityNotFound => "CAPABILITY_NOT_FOUND",
            ErrorCode::CapabilityNotAvailable => "CAPABILITY_NOT_AVAILABLE",
            ErrorCode::AmbiguousInstance => "AMBIGUOUS_INSTANCE",
            ErrorCode::ComponentUnmounted => "COMPONENT_UNMOUNTED",
            ErrorCode::StaleCapability => "STALE_CAPABILITY",
            ErrorCode::InvocationConflict => "INVOCATION_CONFLICT",
            ErrorCode::InvalidInput => "INVALID_INPUT",
            ErrorCode::NotAuthenticated => "NOT_AUTHENTICATED",
            ErrorCode::NotAuthorized => "NOT_AUTHORIZED",
            ErrorCode::PreconditionFailed => "PRECONDITION_FAILED",
            ErrorCode::ConfirmationRequired => "CONFIRMATION_REQUIRED",
            ErrorCode::ConfirmationInvalid => "CONFIRMATION_INVALID",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::ExecutionFailed => "EXECUTION_FAILED",
        }
    }

    /// The default retry hint.
    pub const fn default_retry(self) -> Retry {
        match self.spec().retry.first() {
            Some(retry) => *retry,
            None => Retry::No,
        }
    }

    /// Whether a terminal result with this code is cached for deduplication.
    pub const fn cacheable(self) -> bool {
        self.spec().cacheable
    }
}

#[allow(clippy::indexing_slicing)] // const evaluation checks the bounds
const _: () = {
    let mut index = 0;
    while index < MATRIX.len() {
        assert!(
            MATRIX[index].code as usize == index,
            "MATRIX must follow enum order"
        );
        assert!(!MATRIX[index].retry.is_empty());
        index += 1;
    }
};

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    details: Option<Map<String, Value>>,
}

impl ErrorPayload {
    /// A payload with the code's default retry hint and no details.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> ErrorPayload {
        let mut message = message.into();
        if message.chars().count() > MAX_MESSAGE {
            let cut: String = message.chars().take(MAX_MESSAGE - 1).collect();
            message = Cow::Owned(cut + "…");
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
pub enum TransientReason {
    /// A handler error.
    HandlerError,
    /// A transport error.
    Transport,
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
            FailureReason::Transient { .. } => {
                "The operation failed temporarily. Retry after a delay."
            }
        }
    }
}

/// Kinds of structural defects in an authored contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DefinitionErrorKind {
    /// An id does not match the grammar.
    InvalidId,
    /// A missing or empty description, non-JSON metadata, a malformed attribute.
    InvalidDefinition,
    /// A schema outside the supported subset.
    UnsupportedSchema,
    /// A capability declares an effect of the other plane.
    PlaneViolation,
    /// Two capabilities of one component share a name.
    DuplicateCapability,
    /// A description, metadata or schema over its limit.
    LimitExceeded,
}

impl DefinitionErrorKind {
    /// The SCREAMING_SNAKE name.
    pub const fn as_str(self) -> &'static str {
        match self {
            DefinitionErrorKind::InvalidId => "INVALID_ID",
            DefinitionErrorKind::InvalidDefinition => "INVALID_DEFINITION",
            DefinitionErrorKind::UnsupportedSchema => "UNSUPPORTED_SCHEMA",
            DefinitionErrorKind::PlaneViolation => "PLANE_VIOLATION",
            DefinitionErrorKind::DuplicateCapability => "DUPLICATE_CAPABILITY",
            DefinitionErrorKind::LimitExceeded => "LIMIT_EXCEEDED",
        }
    }
}

/// A structural defect in an authored contract, for the developer.
///
/// Raised in every environment: structural defects are deterministic bugs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefinitionError {
    kind: DefinitionErrorKind,
    subject: String,
    message: String,
}

impl DefinitionError {
    /// A defect of `kind` in `subject` (a component type, a capability id, a
    /// schema location).
    pub fn new(
        kind: DefinitionErrorKind,
        subject: impl Into<String>,
        message: impl Into<String>,
    ) -> DefinitionError {
        DefinitionError {
            kind,
            subject: subject.into(),
            message: message.into(),
        }
    }

    /// The kind of defect.
    pub fn kind(&self) -> DefinitionErrorKind {
        self.kind
    }

    /// What the defect is in.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// What is wrong and how to fix it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prefixes the subject with an outer location.
    #[must_use]
    pub fn within(mut self, outer: &str) -> DefinitionError {
        self.subject = if self.subject.is_empty() {
            outer.to_owned()
        } else {
            format!("{outer} {}", self.subject)
        };
        self
    }
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in {}: {}",
            self.kind.as_str(),
            self.subject,
            self.message
        )
    }
}

impl std::error::Error for DefinitionError {}

/// A failure returned by a precondition check: agent-safe message and details.
#[derive(Clone, Debug, PartialEq)]
pub struct PreconditionFailure {
    message: Cow<'static, str>,
    details: Map<String, Value>,
}

impl PreconditionFailure {
    /// A failure with an agent-safe, imperative message.
    pub fn new(message: impl Into<Cow<'static, str>>) -> PreconditionFailure {
        PreconditionFailure {
            message: message.into(),
            details: Map::new(),
        }
    }

    /// Adds an agent-safe detail (for example `"reason"` or `"unknownIds"`).
    #[must_use]
    pub fn with_detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.details.insert(key.into(), value.into());
        self
    }

    /// The agent-facing payload.
    pub fn into_payload(self) -> ErrorPayload {
        let mut payload = ErrorPayload::precondition_failed(self.message);
        if !self.details.is_empty() {
            payload.details = Some(self.details);
        }
        payload
    }
}

/// The error a handler returns.
///
/// Any `std::error::Error + Send + Sync + 'static` converts into it with `?`;
/// such errors settle as `EXECUTION_FAILED` with a fixed message, and their
/// text reaches only the operator channel. Use the constructors to tell the
/// agent something specific.
///
/// ```
/// use agent_surface::error::{ActionError, ErrorCode};
///
/// fn parse(text: &str) -> Result<u32, ActionError> {
///     Ok(text.parse::<u32>()?) // ParseIntError → EXECUTION_FAILED, text kept for operators
/// }
///
/// let err = ActionError::precondition("Select at least one device first");
/// assert_eq!(err.to_payload().code(), ErrorCode::PreconditionFailed);
/// assert_eq!(parse("x").unwrap_err().to_payload().code(), ErrorCode::ExecutionFailed);
/// ```
pub struct ActionError {
    repr: ActionErrorRepr,
}

enum ActionErrorRepr {
    Precondition(PreconditionFailure),
    NotAuthorized,
    Failed {
        cause: Box<dyn std::error::Error + Send + Sync + 'static>,
        transient: Option<Option<u64>>,
    },
    Message {
        operator_message: Cow<'static, str>,
        transient: Option<Option<u64>>,
    },
    Cancelled,
    OutputInvalid(String),
}

impl ActionError {
    /// `PRECONDITION_FAILED` with an agent-safe message.
    pub fn precondition(message: impl Into<Cow<'static, str>>) -> ActionError {
        PreconditionFailure::new(message).into()
    }

    /// `NOT_AUTHORIZED` (origin `client`).
    pub fn not_authorized() -> ActionError {
        ActionError {
            repr: ActionErrorRepr::NotAuthorized,
        }
    }

    /// `CANCELLED`: the handler observed its cancellation token and stopped.
    pub fn cancelled() -> ActionError {
        ActionError {
            repr: ActionErrorRepr::Cancelled,
        }
    }

    /// `EXECUTION_FAILED` with an operator-only explanation.
    pub fn failed(operator_message: impl Into<Cow<'static, str>>) -> ActionError {
        ActionError {
            repr: ActionErrorRepr::Message {
                operator_message: operator_message.into(),
                transient: None,
            },
        }
    }

    /// `EXECUTION_FAILED` `output-invalid`: the output could not be serialized.
    pub(crate) fn output_invalid(operator_message: String) -> ActionError {
        ActionError {
            repr: ActionErrorRepr::OutputInvalid(operator_message),
        }
    }

    /// Marks the failure transient: the agent may retry after a delay.
    #[must_use]
    pub fn transient(mut self, retry_after_ms: Option<u64>) -> ActionError {
        match &mut self.repr {
            ActionErrorRepr::Failed { transient, .. }
            | ActionErrorRepr::Message { transient, .. } => *transient = Some(retry_after_ms),
            _ => {}
        }
        self
    }

    /// The agent-facing payload.
    pub fn to_payload(&self) -> ErrorPayload {
        let failure = |transient: &Option<Option<u64>>| match transient {
            Some(retry_after_ms) => FailureReason::Transient {
                reason: TransientReason::HandlerError,
                retry_after_ms: *retry_after_ms,
            },
            None => FailureReason::HandlerError,
        };
        match &self.repr {
            ActionErrorRepr::Precondition(failure) => failure.clone().into_payload(),
            ActionErrorRepr::NotAuthorized => {
                ErrorPayload::not_authorized(crate::error::Origin::Client)
            }
            ActionErrorRepr::Cancelled => ErrorPayload::cancelled(),
            ActionErrorRepr::OutputInvalid(_) => {
                ErrorPayload::execution_failed(FailureReason::OutputInvalid)
            }
            ActionErrorRepr::Failed { transient, .. }
            | ActionErrorRepr::Message { transient, .. } => {
                ErrorPayload::execution_failed(failure(transient))
            }
        }
    }

    /// The operator-channel description (never shown to an agent).
    pub fn operator_message(&self) -> String {
        match &self.repr {
            ActionErrorRepr::Precondition(failure) => {
                format!("precondition failed: {}", failure.message)
            }
            ActionErrorRepr::NotAuthorized => "not authorized".to_owned(),
            ActionErrorRepr::Cancelled => "cancelled by the handler".to_owned(),
            ActionErrorRepr::OutputInvalid(message) => {
                format!("output is not valid JSON: {message}")
            }
            ActionErrorRepr::Failed { cause, .. } => {
                let mut text = cause.to_string();
                let mut source = cause.source();
                while let Some(inner) = source {
                    text.push_str(": ");
                    text.push_str(&inner.to_string());
                    source = inner.source();
                }
                text
            }
            ActionErrorRepr::Message {
                operator_message, ..
            } => operator_message.to_string(),
        }
    }
}

impl fmt::Debug for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActionError")
            .field("code", &self.to_payload().code())
            .field("operator_message", &self.operator_message())
            .finish()
    }
}

impl fmt::Display for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.operator_message())
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ActionError {
    fn from(cause: E) -> ActionError {
        ActionError {
            repr: ActionErrorRepr::Failed {
                cause: Box::new(cause),
                transient: None,
            },
        }
    }
}

impl From<PreconditionFailure> for ActionError {
    fn from(failure: PreconditionFailure) -> ActionError {
        ActionError {
            repr: ActionErrorRepr::Precondition(failure),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn payload_serializes_exactly() {
        let payload = ErrorPayload::not_found();
        assert_eq!(
            serde_json::to_value(&payload).unwrap(),
            json!({
                "code": "CAPABILITY_NOT_FOUND",
                "message": "This capability is not in your surface. Refresh the list of capabilities.",
                "retry": "after-refresh"
            })
        );
        let back: ErrorPayload =
            serde_json::from_value(serde_json::to_value(&payload).unwrap()).unwrap();
        assert_eq!(back, payload);
    }

    #[test]
    fn details_outside_the_matrix_are_dropped() {
        let payload = ErrorPayload::not_found().with_detail("instances", json!([]));
        assert!(payload.details().is_none());
        let payload = ErrorPayload::conflict().with_retry(Retry::Yes);
        assert_eq!(payload.retry(), Retry::WithChanges);
    }

    #[test]
    fn handler_error_text_never_reaches_the_payload() {
        let err: ActionError = std::io::Error::other("SELECT * FROM secrets").into();
        let payload = serde_json::to_string(&err.to_payload()).unwrap();
        assert!(!payload.contains("secrets"));
        assert!(err.operator_message().contains("secrets"));
        let transient = ActionError::failed("db down")
            .transient(Some(500))
            .to_payload();
        assert_eq!(transient.retry(), Retry::AfterDelay);
        assert_eq!(transient.detail("retryAfterMs"), Some(&json!(500)));
    }

    #[test]
    fn timeout_retry_follows_idempotency() {
        assert_eq!(ErrorPayload::timeout(10, true).retry(), Retry::Yes);
        assert_eq!(ErrorPayload::timeout(10, false).retry(), Retry::No);
    }

    #[test]
    fn long_messages_are_cut() {
        let payload = ErrorPayload::precondition_failed("x".repeat(400));
        assert_eq!(payload.message().chars().count(), MAX_MESSAGE);
    }
}
