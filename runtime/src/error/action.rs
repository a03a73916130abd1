//! Handler errors: what a precondition or a handler returns when it fails,
//! turned into an agent-facing payload from a fixed template.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

use super::{ErrorPayload, FailureReason, TransientReason};

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
