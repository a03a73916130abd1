//! `tools/call`: runs the tool as the session's consumer under the
//! request's cancellation token, with two-phase or elicited confirmations.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitationAction,
    InputRequest, InputRequiredResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::convert::{
    approval_schema, approves, confirmation_of, decode_name, is_modern, to_call_result,
};
use super::identity::{Acting, Caller};
use super::view::View;
use super::{CONFIRM_KEY, CONFIRMATION_META, ELICITATION_CHANNEL, McpSession, PendingElicitation};
use crate::adapter::bounds;
use crate::confirmation::{WaitGuard, Withdrawal, settle_now};
use crate::context::{Consumer, ConsumerKind};
use crate::error::ErrorPayload;
use crate::invoke::{Invocation, InvocationResult, InvokeOptions};
use crate::toolset::ExecuteOptions;

impl McpSession {
    /// Handles `tools/call`.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(mut acting) = self.acting(&context.extensions, &context.peer) else {
            return Err(ErrorData::internal_error(
                "the application is shutting down",
                None,
            ));
        };
        let cancel = context.ct.clone();
        let name = request.name.to_string();
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let invocation_id = self.invocation_id(&acting, &context.id);
        let max_id = self.shared.registry.limits().max_id_bytes;
        if invocation_id.as_ref().is_some_and(|id| id.len() > max_id) {
            // The agent chose the id: refused here, never kept anywhere.
            let issue = bounds::id_too_long("/invocationId", max_id);
            let refused = self.settled(&name, None, ErrorPayload::invalid_input(&[issue]));
            return Ok(to_call_result(&refused).into());
        }
        // rmcp hands the request's `_meta` over in the context; a params
        // `_meta` is read too.
        let explicit = context
            .meta
            .0
            .0
            .get(CONFIRMATION_META)
            .or_else(|| {
                request
                    .meta
                    .as_ref()
                    .and_then(|meta| meta.0.0.get(CONFIRMATION_META))
            })
            .and_then(Value::as_str)
            .map(str::to_owned);
        // Evidence an anonymous caller was given acts as whom it was given to.
        if let Some(confirmation_id) = explicit.as_deref()
            && acting.caller == Caller::Anonymous
            && let Some(recorded) = self.issued_to(confirmation_id)
            && let Some(adopted) = self.adopt(&acting, &recorded, true)
        {
            acting = adopted;
        }

        // A 2026-07-28 retry answering our input request.
        if let Some(state) = request.request_state.as_deref() {
            // The clock may be host code: read before the lock.
            let now = self.shared.registry.now_ms();
            let pending = self
                .shared
                .elicitations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .peek(state, now)
                .cloned();
            // Bound to the caller it was issued to: a session or the
            // identify hook's principal must be that caller; an anonymous
            // caller's only credential is the secret state itself.
            let Some((pending, acting)) = pending
                .filter(|p| p.tool == name && p.arguments == arguments)
                .and_then(|p| {
                    let adopted = self.adopt(&acting, &p.consumer, p.anonymous)?;
                    Some((p, adopted))
                })
            else {
                return Err(ErrorData::invalid_params(
                    "unknown or mismatched requestState",
                    None,
                ));
            };
            let _busy = self.shared.activity.begin(self.poked(&acting));
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(CONFIRM_KEY));
            let action = answer
                .and_then(|a| a.get("action"))
                .and_then(|a| serde_json::from_value::<ElicitationAction>(a.clone()).ok())
                .unwrap_or(ElicitationAction::Cancel);
            let approved = approves(action, answer.and_then(|a| a.get("content")));
            self.shared
                .elicitations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(state);
            self.answer_elicitation(&acting, &pending.confirmation_id, approved);
            // Denied: the retry reports CONFIRMATION_INVALID {denied}; never retried further.
            let result = self
                .execute(
                    &acting.view,
                    &name,
                    pending.arguments,
                    None,
                    Some(&pending.confirmation_id),
                    cancel,
                )
                .await;
            return Ok(to_call_result(&result).into());
        }

        // Until this call ends: then only this consumer's watchers re-check
        // (any call may change what is available: selection, navigation).
        let _busy = self.shared.activity.begin(self.poked(&acting));
        let view = Arc::clone(&acting.view);
        if view.toolset.tool(&name).is_none() {
            // Not in this consumer's tools: a stale name (a capability that
            // went away) still gets the pipeline's precise error; anything
            // else is not a tool at all.
            let Some((id, instance)) = decode_name(&name) else {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{name}`"),
                    None,
                ));
            };
            let mut invocation = Invocation::new(id).input(arguments);
            invocation.instance_id = instance;
            invocation.invocation_id = invocation_id;
            let result = self
                .shared
                .registry
                .invoke(invocation, self.options(&view, cancel))
                .await;
            return Ok(to_call_result(&result).into());
        }

        let result = self
            .execute(
                &view,
                &name,
                arguments.clone(),
                invocation_id.as_deref(),
                explicit.as_deref(),
                cancel.clone(),
            )
            .await;
        if let Some(confirmation_id) = confirmation_of(&result) {
            self.issue(&acting, &confirmation_id);
        }
        // Asking the client is an approval channel only where the host
        // declared it human-facing (off by default beside an in-app
        // approver).
        let supports_elicitation = self.shared.elicitation
            && context
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.elicitation.is_some());
        let outcome = match confirmation_of(&result) {
            Some(confirmation_id) if supports_elicitation && explicit.is_none() => {
                let message = self.ask_text(&confirmation_id);
                if is_modern(&context) {
                    // Ask in an input-required round; the state is a fresh
                    // secret naming a record kept here (never the
                    // confirmation id, which the page and audit show), so
                    // only the caller it was sent to can answer. The clock
                    // is read before the lock.
                    let Some(state) = secret_state() else {
                        return Ok(to_call_result(&result).into());
                    };
                    let now = self.shared.registry.now_ms();
                    self.shared
                        .elicitations
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(
                            state.clone(),
                            PendingElicitation {
                                confirmation_id: confirmation_id.clone(),
                                consumer: acting.consumer.clone(),
                                anonymous: acting.caller == Caller::Anonymous,
                                tool: name,
                                arguments,
                            },
                            now,
                        );
                    let Some(schema) = approval_schema() else {
                        return Ok(to_call_result(&result).into());
                    };
                    let ask = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message,
                        requested_schema: schema,
                    });
                    let requests =
                        BTreeMap::from([(CONFIRM_KEY.to_owned(), InputRequest::Elicitation(ask))]);
                    return Ok(InputRequiredResult::new(Some(requests), Some(state)).into());
                }
                let asked = async {
                    let schema = approval_schema()?;
                    context
                        .peer
                        .create_elicitation(ElicitRequestParams::FormElicitationParams {
                            meta: None,
                            message,
                            requested_schema: schema,
                        })
                        .await
                        .ok()
                };
                // If this call's future is dropped while the client asks
                // (the connection went away), the guard withdraws the
                // request and settles the call CANCELLED, there and then.
                let abandoned = {
                    let toolset = view.toolset.clone();
                    let (name, arguments) = (name.clone(), arguments.clone());
                    let ids = invocation_id.clone();
                    move |withdrawal: Withdrawal| {
                        if withdrawal == Withdrawal::Awaited {
                            return;
                        }
                        let token = CancellationToken::new();
                        token.cancel();
                        let options = ExecuteOptions {
                            tool_call_id: ids.as_deref(),
                            confirmation_id: None,
                            cancellation: Some(token),
                        };
                        let _ = settle_now(toolset.execute_with_options(&name, arguments, options));
                    }
                };
                let mut waiting = self.shared.registry.confirmations().wait_guard(
                    &confirmation_id,
                    view.toolset.consumer(),
                    abandoned,
                );
                let answer = tokio::select! {
                    answer = asked => Some(answer),
                    // Ended elsewhere while the client asks (withdrawn by an
                    // unmount, answered in the app, expired): the retry
                    // below reports how, at once.
                    _ = waiting.outcome() => None,
                    () = cancel.cancelled() => {
                        return Ok(to_call_result(&self.gave_up(
                            waiting,
                            &view,
                            &name,
                            arguments,
                            invocation_id,
                            cancel,
                        ).await).into());
                    }
                };
                if let Some(answer) = answer {
                    // The client's person answered: the wait is over,
                    // nothing is withdrawn.
                    waiting.finish();
                    let approved = answer.is_some_and(|a| approves(a.action, a.content.as_ref()));
                    self.answer_elicitation(&acting, &confirmation_id, approved);
                } else {
                    waiting.finish();
                }
                // Denied: the retry reports CONFIRMATION_INVALID {denied}.
                self.execute(
                    &view,
                    &name,
                    arguments,
                    invocation_id.as_deref(),
                    Some(&confirmation_id),
                    cancel,
                )
                .await
            }
            _ => result,
        };
        Ok(to_call_result(&outcome).into())
    }

    /// The client gave up on a call while it asked its person: the person
    /// is no longer asked, and the call settles CANCELLED through the
    /// pipeline (audited, kept for its id) — unless another call still
    /// waits on the same request, whose attempt this one shares: it ends
    /// alone.
    async fn gave_up(
        &self,
        waiting: WaitGuard,
        view: &View,
        name: &str,
        arguments: Value,
        invocation_id: Option<String>,
        cancel: CancellationToken,
    ) -> InvocationResult {
        match waiting.cancel() {
            Withdrawal::Awaited => self.settled(name, invocation_id, ErrorPayload::cancelled()),
            // The agent's own request, without evidence: its retry with the
            // same id gets this CANCELLED, never a conflict.
            Withdrawal::Withdrawn | Withdrawal::NotOpen => {
                self.execute(
                    view,
                    name,
                    arguments,
                    invocation_id.as_deref(),
                    None,
                    cancel,
                )
                .await
            }
        }
    }

    /// What re-checks when a call of `acting` ends: its own view's
    /// watchers, and for an anonymous caller every anonymous caller's (a
    /// listen stream is a request of its own) — one shared signal, so the
    /// call's cost never grows with how many are listening.
    fn poked(&self, acting: &Acting) -> (Arc<View>, bool) {
        (Arc::clone(&acting.view), acting.caller == Caller::Anonymous)
    }

    /// Options for a call as `view`'s consumer, cancelled with the request.
    fn options(&self, view: &View, cancel: CancellationToken) -> InvokeOptions {
        InvokeOptions {
            cancellation: Some(cancel),
            ..InvokeOptions::consumer(view.toolset.consumer().clone())
        }
    }

    /// Runs the tool `name` of `view`'s toolset (what the client last
    /// listed: its registration and surface version travel with the call),
    /// cancelled with the request. Without evidence, a call of the same tool
    /// with the same input reuses the confirmation its previous attempt was
    /// asked for, so a model retries by calling again once the user approved.
    async fn execute(
        &self,
        view: &View,
        name: &str,
        input: Value,
        invocation_id: Option<&str>,
        confirmation_id: Option<&str>,
        cancel: CancellationToken,
    ) -> InvocationResult {
        view.toolset
            .execute_with_options(
                name,
                input,
                ExecuteOptions {
                    tool_call_id: invocation_id,
                    confirmation_id,
                    cancellation: Some(cancel),
                },
            )
            .await
    }

    /// A result settled here, without the pipeline.
    fn settled(
        &self,
        name: &str,
        invocation_id: Option<String>,
        error: ErrorPayload,
    ) -> InvocationResult {
        let registry = &self.shared.registry;
        let invocation_id = invocation_id.unwrap_or_else(|| registry.mint_invocation_id());
        InvocationResult::new(
            Arc::from(invocation_id),
            Arc::from(name),
            Err(error),
            registry.version(),
            false,
        )
    }

    /// The client's answer to an elicitation it showed its person: resolved
    /// through the `mcp-elicitation` agent-connection channel, which
    /// answers only this caller's own requests, recorded with the client's
    /// name and version.
    fn answer_elicitation(&self, acting: &Acting, confirmation_id: &str, approved: bool) {
        let confirmations = self.shared.registry.confirmations();
        let Some(shown) = confirmations.find(confirmation_id).map(|p| p.shown()) else {
            return;
        };
        let client = acting
            .view
            .toolset
            .consumer()
            .label()
            .unwrap_or("mcp client")
            .to_owned();
        let consumer = Consumer::new(ConsumerKind::Mcp, acting.consumer.as_str());
        let approver = confirmations.connection_approver(ELICITATION_CHANNEL, &consumer, &client);
        // Refused (another consumer's request, no longer pending): the
        // retry reports why; nothing else is resolved.
        let _ = confirmations.resolve(&shown, approved, &approver);
    }

    /// The message shown to the human for a pending confirmation.
    fn ask_text(&self, confirmation_id: &str) -> String {
        let pending = self.shared.registry.confirmations().find(confirmation_id);
        match pending {
            // Both parts escaped: no bidi, zero-width or control character
            // of the agent's reaches the human as is.
            Some(p) => format!(
                "Approve this {} operation?\n{}\nExact input: {}",
                p.effect.as_str(),
                crate::adapter::text::escape(&p.summary),
                p.display_input()
            ),
            None => "Approve this operation?".to_owned(),
        }
    }
}

/// A fresh input-request state: `rs_` and 128 random bits as hex (`None`
/// without system randomness: the call then answers two-phase).
fn secret_state() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let mut state = String::with_capacity(3 + 32);
    state.push_str("rs_");
    for byte in bytes {
        use std::fmt::Write as _;
        let _ = write!(state, "{byte:02x}");
    }
    Some(state)
}
