//! Running calls: the toolset's own settled results, and one call through
//! the pipeline (with the wait for the user's confirmation in wait mode,
//! and the meta verbs' hint for a target of the wrong kind).

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{ConfirmationMode, Mode, Shared};
use crate::adapter::bounds;
use crate::adapter::wait::{self, Then};
use crate::confirmation::settle_now;
use crate::error::{ErrorCode, ErrorPayload};
use crate::invoke::{Invocation, InvocationResult, InvokeOptions, Kinds};
use crate::registry::Registry;
use crate::schema::Issue;
use crate::schema::key_pointer;

impl Shared {
    /// Refuses arguments nested deeper than the pipeline accepts before
    /// the toolset walks them (a retry key, a copy of the request); the
    /// pipeline checks every other bound itself. In meta mode the bound
    /// applies to each envelope field, named in the issue.
    pub(in crate::adapter) fn check_depth(&self, input: &Value) -> Result<(), ErrorPayload> {
        let max = self.registry.limits().max_input_depth;
        let issue = match (self.mode, input) {
            (Mode::Meta, Value::Object(fields)) => fields
                .iter()
                .find(|(_, value)| !bounds::depth_within(value, max))
                .map(|(key, _)| bounds::too_deep(&key_pointer(key), max)),
            _ => (!bounds::depth_within(input, max)).then(|| bounds::too_deep("", max)),
        };
        match issue {
            Some(issue) => Err(ErrorPayload::invalid_input(&[issue])),
            None => Ok(()),
        }
    }

    /// A result settled by the toolset itself (unknown tool, envelope
    /// error, discovery), under the tool-call id or a fresh invocation id.
    /// A tool-call id or tool name over `max_id_bytes` is never echoed: the
    /// id is replaced by a fresh one, the name cut to the limit.
    pub(in crate::adapter) fn settled(
        &self,
        name: &str,
        tool_call_id: Option<&str>,
        outcome: Result<Option<Arc<Value>>, ErrorPayload>,
    ) -> InvocationResult {
        let max = self.registry.limits().max_id_bytes;
        let invocation_id: Arc<str> = match tool_call_id {
            Some(id) if id.len() <= max => Arc::from(id),
            _ => Arc::from(self.registry.mint_invocation_id()),
        };
        InvocationResult::new(
            invocation_id,
            Arc::from(bounds::truncated(name, max)),
            outcome,
            self.registry.version(),
            false,
        )
    }

    pub(in crate::adapter) fn immediate(
        &self,
        name: &str,
        tool_call_id: Option<&str>,
        error: ErrorPayload,
    ) -> InvocationResult {
        self.settled(name, tool_call_id, Err(error))
    }

    /// What every call through this toolset meets before anything else: a
    /// disposed toolset settles it `CANCELLED`, and input nested deeper
    /// than the pipeline accepts is refused before it is walked or copied.
    pub(in crate::adapter) fn refused_early(
        &self,
        name: &str,
        tool_call_id: Option<&str>,
        input: &Value,
    ) -> Option<InvocationResult> {
        if self.disposed.is_cancelled() {
            return Some(self.immediate(name, tool_call_id, ErrorPayload::cancelled()));
        }
        self.check_depth(input)
            .err()
            .map(|error| self.immediate(name, tool_call_id, error))
    }

    /// A direct-mode call of the tool whose name and arguments give `key`
    /// (see `retry_key`; `None` unless two-phase): the confirmation the
    /// agent was asked for under the same name and arguments goes with it
    /// (two-phase), or the person is waited for (wait mode), exactly as
    /// for every tool.
    pub(in crate::adapter) async fn run_direct(
        &self,
        key: Option<u64>,
        mut request: Invocation,
        confirmation_id: Option<&str>,
        cancellation: Option<CancellationToken>,
    ) -> InvocationResult {
        request.confirmation_id = confirmation_id
            .map(str::to_owned)
            .or_else(|| self.remembered(key));
        let result = self.run(request, Kinds::All, cancellation).await;
        self.remember(key, &result);
        result
    }

    /// One call through the pipeline; in wait mode a confirmation request
    /// waits for the user and the call is retried with the evidence.
    pub(in crate::adapter) async fn run(
        &self,
        request: Invocation,
        kinds: Kinds,
        cancellation: Option<CancellationToken>,
    ) -> InvocationResult {
        let result = self.run_once_or_wait(request, kinds, cancellation).await;
        with_verb_hint(result)
    }

    async fn run_once_or_wait(
        &self,
        request: Invocation,
        kinds: Kinds,
        cancellation: Option<CancellationToken>,
    ) -> InvocationResult {
        let options = InvokeOptions {
            scope: self.options.scope.clone(),
            cancellation,
            kinds,
            ..InvokeOptions::consumer(self.options.consumer.clone())
        };
        if self.confirmations != ConfirmationMode::Wait || request.confirmation_id.is_some() {
            // Nobody waits for the person here: one run, under the agent's
            // own id or none (a call without one is nobody's to retry or
            // join, so the pipeline remembers nothing of it).
            return self.registry.invoke(request, options).await;
        }
        let mut request = request;
        if request.invocation_id.is_none() {
            // Minted before the first attempt, not taken from its result:
            // the retry after the person answers reuses it as its key, and
            // an id the agent claimed beforehand must conflict now, before
            // the person is asked, never after they approved.
            request.invocation_id = Some(self.registry.mint_invocation_id());
        }
        let first = self.registry.invoke(request.clone(), options.clone()).await;
        let Some(confirmation_id) = first
            .error()
            .filter(|error| error.code() == ErrorCode::ConfirmationRequired)
            .and_then(|error| error.detail("confirmationId"))
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return first;
        };
        // The wait is a large future: on the heap, only for the calls that
        // wait, so every call's future stays small.
        Box::pin(self.wait_then_retry(request, options, first, confirmation_id)).await
    }

    /// Wait mode, after the first attempt asked for `confirmation_id`: the
    /// wait for the person, then the retry with the evidence.
    async fn wait_then_retry(
        &self,
        request: Invocation,
        options: InvokeOptions,
        first: InvocationResult,
        confirmation_id: String,
    ) -> InvocationResult {
        let external = options.cancellation.clone();
        // If this future is dropped while the person reads (its task
        // aborted), the guard withdraws the request (unless another call
        // waits on it) and settles the call CANCELLED through the pipeline,
        // there and then.
        let settle_abandoned = {
            let (registry, request, options) =
                (self.registry.clone(), request.clone(), options.clone());
            move || {
                let _ = settle_now(settle_cancelled(&registry, request, options));
            }
        };
        let interrupted = async {
            let cancelled = async {
                match &external {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = cancelled => {}
                () = self.disposed.cancelled() => {}
            }
        };
        let then = wait::for_the_person(
            &self.registry,
            &self.options.consumer,
            &confirmation_id,
            std::future::pending(),
            interrupted,
            settle_abandoned,
        )
        .await;
        let cancelled = || {
            self.immediate(
                first.capability_id(),
                Some(first.invocation_id()),
                ErrorPayload::cancelled(),
            )
        };
        // Its toolset disposed: it ends here, through nothing that keeps a
        // record its identity could later replay or conflict with.
        if self.disposed.is_cancelled() {
            return cancelled();
        }
        match then {
            Then::EndAlone { .. } => cancelled(),
            Then::SettleCancelled => settle_cancelled(&self.registry, request, options).await,
            // Approved, denied or expired: the retry reports which.
            Then::Retry(_) => {
                self.registry
                    .invoke(request.confirmation(confirmation_id), options)
                    .await
            }
        }
    }
}

/// Settles `request` (the agent's own, without evidence: its retry with the
/// same id gets this result, never a conflict) `CANCELLED` through the
/// pipeline: with an already cancelled token it runs nothing and asks
/// nobody, and is audited and kept for its invocation id like any terminal
/// result.
async fn settle_cancelled(
    registry: &Registry,
    request: Invocation,
    options: InvokeOptions,
) -> InvocationResult {
    let token = CancellationToken::new();
    token.cancel();
    registry
        .invoke(
            request,
            InvokeOptions {
                cancellation: Some(token),
                ..options
            },
        )
        .await
}

/// The meta verbs' hint for a target of the wrong kind: the pipeline says
/// what the target is; the toolset says which verb to use.
fn with_verb_hint(result: InvocationResult) -> InvocationResult {
    let hint = match result.error() {
        Some(error) if error.code() == ErrorCode::InvalidInput => {
            let issue = error
                .detail("issues")
                .and_then(Value::as_array)
                .and_then(|issues| issues.first())
                .filter(|issue| issue.get("path").and_then(Value::as_str) == Some("/capabilityId"))
                .and_then(|issue| issue.get("message"))
                .and_then(Value::as_str);
            match issue {
                Some(crate::invoke::IS_AN_OBSERVATION) => {
                    "this capability is an observation; read it with surface_read"
                }
                Some(crate::invoke::IS_NOT_AN_OBSERVATION) => {
                    "this capability is not an observation; call it with surface_act"
                }
                _ => return result,
            }
        }
        _ => return result,
    };
    InvocationResult::new(
        Arc::from(result.invocation_id()),
        Arc::from(result.capability_id()),
        Err(ErrorPayload::invalid_input(&[Issue::new(
            "/capabilityId",
            hint,
        )])),
        result.surface_version(),
        result.surface_changed(),
    )
}
