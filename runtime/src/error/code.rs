//! The agent-facing error codes, their retry hints, and the one table
//! (the error matrix) of retry hints, cacheability, phases and detail keys.

use std::fmt;

use serde::{Deserialize, Serialize};

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
#[non_exhaustive]
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
