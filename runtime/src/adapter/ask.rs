//! A tool call held open while the person answers its confirmation, then
//! retried with the evidence: the confirmation round trip of a transport
//! whose client can ask its own person (MCP elicitation and URL approvals),
//! on the kit's one wait ([`wait`](super::wait)), with the [`ToolCall`] it
//! runs again.
//!
//! The call's wait is a [`WaitGuard`](crate::confirmation::WaitGuard): the
//! person is never left asked for something nobody waits for. It ends one
//! of four ways:
//! - the request is answered (in the application, by any channel the host
//!   trusts), expires or is withdrawn: the call is retried with the
//!   evidence, and the pipeline reports the outcome (`CONFIRMATION_INVALID`
//!   with `denied`, `expired`, …, or the action's result);
//! - the client's own person answered (`ask` resolved): recorded through
//!   `answer`, then retried the same way;
//! - the caller cancels: the request is withdrawn unless another call
//!   still waits on it, and the call settles `CANCELLED`;
//! - the caller's future is dropped: the same, settled there and then.

use std::future::Future;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::wait::{self, Then};
use super::{ExecuteOptions, Toolset};
use crate::confirmation::settle_now;
use crate::error::{ErrorCode, ErrorPayload};
use crate::invoke::{Invocation, InvocationResult};

/// One tool call an adapter may run again: the tool's wire name, the
/// arguments the agent sent, and the invocation id it carries.
///
/// Arguments nested deeper than any JSON text parses to
/// ([`PARSE_DEPTH`](crate::adapter::bounds::PARSE_DEPTH)) are measured
/// iteratively and let go on arrival: such a call keeps no arguments and
/// every run of it is refused `INVALID_INPUT`, so copying, printing or
/// dropping a `ToolCall` never walks a value deeper than that.
#[derive(Clone, Debug)]
pub struct ToolCall {
    name: String,
    arguments: Value,
    invocation_id: Option<String>,
    /// The arguments nested deeper than `PARSE_DEPTH` (and were let go).
    too_deep: bool,
}

impl ToolCall {
    /// A call of `name` with `arguments` and no invocation id.
    pub fn new(name: impl Into<String>, arguments: Value) -> ToolCall {
        let too_deep =
            !crate::adapter::bounds::depth_within(&arguments, crate::adapter::bounds::PARSE_DEPTH);
        let arguments = if too_deep {
            crate::adapter::bounds::dispose(arguments);
            Value::Null
        } else {
            arguments
        };
        ToolCall {
            name: name.into(),
            arguments,
            invocation_id: None,
            too_deep,
        }
    }

    /// Settles the call `CANCELLED` as the agent sent it — without
    /// evidence, not even the confirmation a two-phase toolset remembers
    /// for it — so the agent's retry with the same id and arguments gets
    /// this settlement, never a conflict. Nothing runs and nobody is asked.
    async fn settle_cancelled(&self, toolset: &Toolset) -> InvocationResult {
        let shared = &toolset.shared;
        shared.unremember(shared.retry_key(&self.name, &self.arguments));
        let token = CancellationToken::new();
        token.cancel();
        self.run(toolset, None, token).await
    }

    /// The refusal of a call whose arguments nested too deep to keep.
    fn refused_too_deep(&self, toolset: &Toolset) -> Option<InvocationResult> {
        self.too_deep.then(|| {
            let max = toolset.registry().limits().max_input_depth;
            crate::adapter::refused(
                toolset.registry(),
                &self.name,
                self.invocation_id.clone(),
                ErrorPayload::invalid_input(&[crate::adapter::bounds::too_deep("", max)]),
            )
        })
    }

    /// With the invocation id the call carries (a transport request id, a
    /// tool-call id): retries deduplicate on it.
    #[must_use]
    pub fn invocation_id(mut self, id: Option<String>) -> ToolCall {
        self.invocation_id = id;
        self
    }

    /// The tool's wire name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The arguments (`null` when they nested too deep to keep).
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// Runs a call whose name is not in `toolset`'s tools: a stale name (a
    /// capability that went away, or moved) is decoded to the capability
    /// it named and run through the pipeline, which reports precisely why
    /// it cannot run now. `None`: the name never was a tool name of
    /// `toolset` (in meta mode, whose tools are its three verbs, no wire
    /// name ever was).
    ///
    /// The call runs exactly as one of the toolset's tools would: with its
    /// reach — its consumer and scope floor (a capability outside the
    /// floor is not found), nothing once the toolset is disposed
    /// (`CANCELLED`) — and its confirmations: in wait mode the person is
    /// waited for (a request is never left open with nobody waiting), in
    /// two-phase mode the agent's retry with the same name and arguments
    /// carries the confirmation it was asked for.
    ///
    /// `confirmation_id` is the evidence the agent presented, if any (a
    /// stateless caller, which has no remembered confirmation, passes it).
    pub async fn run_stale(
        &self,
        toolset: &Toolset,
        confirmation_id: Option<&str>,
        cancel: CancellationToken,
    ) -> Option<InvocationResult> {
        let shared = &toolset.shared;
        if shared.mode == super::Mode::Meta {
            return None;
        }
        let (id, instance) = crate::wire::decode_full_name(&self.name)?;
        if let Some(refused) = self.refused_too_deep(toolset) {
            return Some(refused);
        }
        // Disposed, or nested too deep to copy: refused as any call is.
        if let Some(refused) =
            shared.refused_early(&self.name, self.invocation_id.as_deref(), &self.arguments)
        {
            return Some(refused);
        }
        let key = shared.retry_key(&self.name, &self.arguments);
        let mut invocation = Invocation::new(id.as_str()).input(self.arguments.clone());
        invocation.instance_id = instance.map(|instance| instance.as_str().to_owned());
        invocation.invocation_id = self.invocation_id.clone();
        Some(
            shared
                .run_direct(key, invocation, confirmation_id, Some(cancel))
                .await,
        )
    }

    /// Runs it once through `toolset`, with `confirmation_id` as evidence
    /// if given, cancelled with `cancel`. A name no longer among the
    /// toolset's tools (it went stale while the call waited for the person)
    /// runs as [`run_stale`](Self::run_stale) does.
    pub async fn run(
        &self,
        toolset: &Toolset,
        confirmation_id: Option<&str>,
        cancel: CancellationToken,
    ) -> InvocationResult {
        if let Some(refused) = self.refused_too_deep(toolset) {
            return refused;
        }
        let result = toolset
            .execute_with_options(
                &self.name,
                self.arguments.clone(),
                ExecuteOptions {
                    tool_call_id: self.invocation_id.as_deref(),
                    confirmation_id,
                    cancellation: Some(cancel.clone()),
                },
            )
            .await;
        // Looked for only when the toolset found no such tool: the common
        // call pays no second catalog lookup.
        let missing = result
            .error()
            .is_some_and(|error| error.code() == ErrorCode::CapabilityNotFound)
            && !toolset.has_tool(&self.name);
        if missing
            && let Some(stale) = Box::pin(self.run_stale(toolset, confirmation_id, cancel)).await
        {
            return stale;
        }
        result
    }
}

/// Holds `call` open while the person answers `confirmation_id` (which
/// the call's first attempt was asked for), then runs it again with the
/// evidence. See the module docs for how the wait ends.
///
/// `ask` is the client's own asking of its person, resolving to whether
/// they approved; an adapter whose requests are answered only in the
/// application passes [`std::future::pending`], and its call completes
/// when the person answers there. When `ask` resolves, `answer` records
/// the answer (through [`answer_on_connection`](crate::adapter::answer_on_connection)).
pub async fn ask_the_person(
    toolset: &Toolset,
    call: &ToolCall,
    confirmation_id: &str,
    ask: impl Future<Output = bool>,
    answer: impl FnOnce(bool),
    cancel: CancellationToken,
) -> InvocationResult {
    // If this future is dropped while the person is asked (the connection
    // went away), the request is withdrawn and the call settled CANCELLED,
    // there and then.
    let settle_abandoned = {
        let toolset = toolset.clone();
        let call = call.clone();
        move || {
            let _ = settle_now(call.settle_cancelled(&toolset));
        }
    };
    let then = wait::for_the_person(
        toolset.registry(),
        toolset.consumer(),
        confirmation_id,
        ask,
        cancel.cancelled(),
        settle_abandoned,
    )
    .await;
    match then {
        Then::EndAlone { agent_left } => {
            if agent_left {
                // Nothing is left that its identity could later replay or
                // conflict with (not even the request this toolset
                // remembers for it).
                let shared = &toolset.shared;
                shared.unremember(shared.retry_key(&call.name, &call.arguments));
            }
            return crate::adapter::refused(
                toolset.registry(),
                call.name(),
                call.invocation_id.clone(),
                ErrorPayload::cancelled(),
            );
        }
        // The agent's own request, without evidence: its retry with the
        // same id gets this CANCELLED, never a conflict.
        Then::SettleCancelled => return call.settle_cancelled(toolset).await,
        Then::Retry(Some(approved)) => answer(approved),
        Then::Retry(None) => {}
    }
    // Denied: the retry reports CONFIRMATION_INVALID {denied}.
    call.run(toolset, Some(confirmation_id), cancel).await
}
