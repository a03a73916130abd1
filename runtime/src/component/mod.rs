//! The [`Component`] trait that `#[agent_component]` implements, and the
//! handler return types it accepts. Name them when you write code generic
//! over components, or make your own type a handler's error or return value.

pub(crate) mod availability;
mod handler_future;
mod helper_types;
mod output;

use std::sync::Arc;

use serde_json::Value;

pub use helper_types::{PreconditionResult, ReasonText, SameInput};

use crate::context::{ActionContext, ReadContext};
use crate::contract::{ComponentContract, TypedInput};
use crate::error::{ActionError, PreconditionFailure};
use crate::schema::AgentOutput;

/// What a handler settles with: its output as JSON (`None` for `()`), or the
/// error it returned.
pub type HandlerOutcome = Result<Option<Value>, ActionError>;

pub use handler_future::HandlerFuture;

/// A type whose `impl` block carries `#[agent_component]`.
///
/// The macro implements this trait; it binds the component's static contract
/// to its handlers. It cannot be implemented through the public, documented
/// API: its dispatch methods are hidden support for generated code, and a
/// registry mounts only contracts the macros linked into the binary's
/// catalog (any other fails with
/// [`MountError::NotInCatalog`](crate::registry::MountError::NotInCatalog)).
/// Deliberate use of hidden items is outside that guarantee.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent component",
    label = "no `#[agent_component]` impl block for this type",
    note = "annotate an `impl {Self} {{ … }}` block with `#[agent_component(type = \"…\")]`"
)]
pub trait Component: Send + Sync + 'static {
    /// The component's static contract.
    fn contract() -> &'static ComponentContract
    where
        Self: Sized;

    #[doc(hidden)]
    fn __contract(&self) -> &'static ComponentContract;

    #[doc(hidden)]
    fn __when(&self, capability: usize) -> bool {
        let _ = capability;
        true
    }

    #[doc(hidden)]
    fn __unavailable_reason(&self, capability: usize) -> Option<String> {
        let _ = capability;
        None
    }

    #[doc(hidden)]
    fn __precondition(
        &self,
        capability: usize,
        input: &TypedInput,
        ctx: &ReadContext,
    ) -> Result<(), PreconditionFailure> {
        let _ = (capability, input, ctx);
        Ok(())
    }

    #[doc(hidden)]
    fn __invoke(
        self: Arc<Self>,
        capability: usize,
        input: Option<TypedInput>,
        ctx: ActionContext,
    ) -> HandlerFuture;

    /// What the registry calls: `__invoke` with the context made only if
    /// the handler takes one. `#[agent_component]` implements both (its
    /// `__invoke` calling this with a context already made); a component
    /// implemented by hand gets this, which makes the context every time.
    #[doc(hidden)]
    fn __invoke_with(
        self: Arc<Self>,
        capability: usize,
        input: Option<TypedInput>,
        ctx: crate::context::ContextSource<'_>,
    ) -> HandlerFuture {
        self.__invoke(capability, input, ctx.into_context())
    }
}

/// The error types a handler may return in its `Result`: [`ActionError`],
/// [`PreconditionFailure`], and everything that converts into
/// `Box<dyn Error + Send + Sync>`: any `std::error::Error + Send + Sync +
/// 'static`, `Box<dyn Error + Send + Sync>` itself, `anyhow::Error`, and
/// `String`/`&'static str`.
///
/// Errors other than the first two become `EXECUTION_FAILED`: the agent
/// sees a generic message, the operator channel the error and its sources.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a handler error",
    label = "not convertible into `ActionError`",
    note = "return `ActionError`, `PreconditionFailure`, any `std::error::Error + Send + Sync + 'static`, `Box<dyn Error + Send + Sync>` or `anyhow::Error`"
)]
pub trait HandlerError {
    /// Converts the error into the handler outcome's error.
    fn into_action_error(self) -> ActionError;
}

impl HandlerError for ActionError {
    fn into_action_error(self) -> ActionError {
        self
    }
}

impl HandlerError for PreconditionFailure {
    fn into_action_error(self) -> ActionError {
        self.into()
    }
}

impl<E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>> HandlerError for E {
    fn into_action_error(self) -> ActionError {
        ActionError::from(BoxedCause(self.into()))
    }
}

/// A boxed error as an `Error` (a box of `dyn Error` is not one itself),
/// keeping its message and its chain of sources.
struct BoxedCause(Box<dyn std::error::Error + Send + Sync + 'static>);

impl std::fmt::Debug for BoxedCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl std::fmt::Display for BoxedCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for BoxedCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// The types a handler may return: an output value, `()`, or a `Result` of
/// either with a [`HandlerError`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a supported handler return type",
    label = "handlers return `T: AgentOutput`, `()`, or `Result<T, E>` with `E: HandlerError`",
    note = "annotate output structs with `#[agent_schema]`; any `std::error::Error + Send + Sync + 'static`, `Box<dyn Error + Send + Sync>` and `anyhow::Error` convert into `ActionError`"
)]
pub trait HandlerReturn {
    /// Generates the raw output schema; `None` for `()`.
    fn output_schema() -> Option<Value>;
    /// Converts the returned value into the handler outcome.
    fn into_outcome(self) -> HandlerOutcome;
}

impl HandlerReturn for () {
    fn output_schema() -> Option<Value> {
        None
    }
    fn into_outcome(self) -> HandlerOutcome {
        Ok(None)
    }
}

impl<T: AgentOutput> HandlerReturn for T {
    fn output_schema() -> Option<Value> {
        Some(crate::schema::generate::<T>())
    }
    fn into_outcome(self) -> HandlerOutcome {
        output::into_value(self).map(Some)
    }
}

impl<T: AgentOutput, E: HandlerError> HandlerReturn for Result<T, E> {
    fn output_schema() -> Option<Value> {
        Some(crate::schema::generate::<T>())
    }
    fn into_outcome(self) -> HandlerOutcome {
        self.map_err(HandlerError::into_action_error)
            .and_then(HandlerReturn::into_outcome)
    }
}

impl<E: HandlerError> HandlerReturn for Result<(), E> {
    fn output_schema() -> Option<Value> {
        None
    }
    fn into_outcome(self) -> HandlerOutcome {
        self.map(|()| None).map_err(HandlerError::into_action_error)
    }
}

/// The types an observation may return: a value, or a `Result` of one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a supported observation return type",
    label = "an observation returns the state it reads: `T` or `Result<T, E>` where `T` has `#[agent_schema]` (or is a standard type such as String, bool, Vec<T>), never `()`",
    note = "return the value the agent reads, e.g. `-> Status`; a method that only changes state is an `#[action(effect = \"local-state\")]`"
)]
pub trait ObservationReturn: HandlerReturn {}

impl<T: AgentOutput> ObservationReturn for T {}

impl<T: AgentOutput, E: HandlerError> ObservationReturn for Result<T, E> {}
