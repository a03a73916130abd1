//! The [`Component`] trait that `#[agent_component]` implements, and the
//! handler return types it accepts.

mod output;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::context::{ActionContext, ReadContext};
use crate::contract::{ComponentContract, TypedInput};
use crate::error::{ActionError, PreconditionFailure};
use crate::schema::AgentOutput;

/// What a handler settles with: its output as JSON (`None` for `()`), or the
/// error it returned.
pub type HandlerOutcome = Result<Option<Value>, ActionError>;

/// The boxed future of a running handler.
pub type HandlerFuture = Pin<Box<dyn Future<Output = HandlerOutcome> + Send + 'static>>;

/// A type whose `impl` block carries `#[agent_component]`.
///
/// The macro implements this trait; it binds the component's static contract
/// to its handlers. Do not implement it by hand: the dispatch methods are not
/// part of the public API, and the registry accepts only contracts that pass
/// every structural check.
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
}

/// The types a handler may return: an output value, `()`, or a `Result` of
/// either with an error convertible into [`ActionError`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a supported handler return type",
    label = "handlers return `T: AgentOutput`, `()`, or `Result<T, E>` with `E: Into<ActionError>`",
    note = "annotate output structs with `#[agent_schema]`; any `std::error::Error + Send + Sync + 'static` converts into `ActionError`"
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
        output::to_value(&self).map(Some)
    }
}

impl<T: AgentOutput, E: Into<ActionError>> HandlerReturn for Result<T, E> {
    fn output_schema() -> Option<Value> {
        Some(crate::schema::generate::<T>())
    }
    fn into_outcome(self) -> HandlerOutcome {
        self.map_err(Into::into)
            .and_then(HandlerReturn::into_outcome)
    }
}

impl<E: Into<ActionError>> HandlerReturn for Result<(), E> {
    fn output_schema() -> Option<Value> {
        None
    }
    fn into_outcome(self) -> HandlerOutcome {
        self.map(|()| None).map_err(Into::into)
    }
}
