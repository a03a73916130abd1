//! The errors handlers return and results carry, in three families that
//! never mix:
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

mod action;
mod code;
mod definition;
mod payload;
mod reasons;

pub use action::{ActionError, PreconditionFailure};
pub use code::{CodeSpec, ErrorCode, Retry};
pub use definition::{DefinitionError, DefinitionErrorKind};
pub use payload::{ErrorPayload, FailureReason, MAX_MESSAGE, TransientReason};
pub use reasons::{
    ConfirmationInvalidReason, Origin, RateLimitReason, StaleReason, UnmountedPhase,
};

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
    fn confirmation_invalid_reasons_write_the_wire_strings_and_retry_hints() {
        let cases = [
            (ConfirmationInvalidReason::Mismatch, "mismatch", Retry::No),
            (
                ConfirmationInvalidReason::Expired,
                "expired",
                Retry::WithConfirmation,
            ),
            (ConfirmationInvalidReason::Denied, "denied", Retry::No),
            (ConfirmationInvalidReason::Consumed, "consumed", Retry::No),
        ];
        for (reason, wire, retry) in cases {
            let payload = ErrorPayload::confirmation_invalid(reason);
            assert_eq!(payload.code(), ErrorCode::ConfirmationInvalid);
            assert_eq!(payload.retry(), retry);
            assert_eq!(payload.detail("reason"), Some(&json!(wire)));
            assert_eq!(reason.to_string(), wire);
        }
    }

    #[test]
    fn long_messages_are_cut() {
        let payload = ErrorPayload::precondition_failed("x".repeat(400));
        assert_eq!(payload.message().chars().count(), MAX_MESSAGE);
    }
}
