//! `tools/call`: runs the tool as the session's consumer under the
//! request's cancellation token, with two-phase or elicited confirmations.
//!
//! One call goes one of four ways:
//! - an answer to an input-required round (a 2026-07-28 retry carrying the
//!   `requestState` it was given): [`McpSession::answer_round`];
//! - a name not in the caller's tools: a stale name still gets the
//!   pipeline's precise error ([`ToolCall::run_stale`]), anything else is
//!   not a tool;
//! - a call that needs no confirmation, or whose caller brings evidence,
//!   or whose client cannot ask its person: one run through the toolset;
//! - a call whose client can ask its person: asked in an input-required
//!   round ([`McpSession::ask_in_round`]) or by an elicitation request while
//!   the call is held open ([`McpSession::ask_while_held`]).

use std::sync::{Arc, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitationAction,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::approval_url::linked;
use super::caller::{Acting, Caller};
use super::convert::{
    approval_schema, approves, confirmation_of, is_modern, secret_state, to_call_result,
};
use super::own_ids::ClientId;
use super::{CONFIRM_KEY, CONFIRMATION_META, ELICITATION_CHANNEL, INVOCATION_META, McpSession};
use crate::adapter::{ToolCall, ask_the_person};
use crate::adapter::{
    answer_on_connection, answer_on_connection_anywhere, approval_prompt, bounds, refused,
};
use crate::context::{Consumer, ConsumerKind};
use crate::error::ErrorPayload;
use crate::invoke::InvocationResult;

impl McpSession {
    /// Handles `tools/call`.
    pub(super) async fn call(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(mut acting) = self.acting(&context.extensions, &context.peer) else {
            return Err(ErrorData::internal_error(
                "the application is shutting down",
                None,
            ));
        };
        let cancel = context.ct.clone();
        // Over HTTP, the call holds its id (and its place) in its session
        // until it ends, even when the client stops reading its response.
        let _running = context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.headers.get(super::http_gate::SESSION_HEADER))
            .and_then(|value| value.to_str().ok())
            .map(|session| {
                self.shared
                    .in_flight
                    .hold(Arc::from(session), ClientId::of(&context).clone())
            });
        // Taken, not copied: nothing below reads the request's name.
        let name = std::mem::take(&mut request.name).into_owned();
        // Taken, not copied: nothing below reads the request's arguments.
        let arguments = Value::Object(request.arguments.take().unwrap_or_default());
        let invocation_id = match meta_str(&request, &context, INVOCATION_META) {
            // The client's own name for the attempt, apart from request ids;
            // an anonymous sessionless caller is a new identity per request,
            // so its name would name nothing (and would only fill the store).
            Some(key) if acting.caller != Caller::Anonymous => Some(format!("mcp-key-{key}")),
            // The client's own request id (the transports hand rmcp each
            // request under an id of their own).
            _ => self.invocation_id(&acting, ClientId::of(&context)),
        };
        let max_id = self.shared.registry.limits().max_id_bytes;
        if invocation_id.as_ref().is_some_and(|id| id.len() > max_id) {
            // The agent chose the id: refused here, never kept anywhere.
            let issue = bounds::id_too_long("/invocationId", max_id);
            let refused = refused(
                &self.shared.registry,
                &name,
                None,
                ErrorPayload::invalid_input(&[issue]),
            );
            return Ok(to_call_result(&refused).into());
        }
        let explicit = evidence(&request, &context);
        // Evidence an anonymous caller was given acts as whom it was given to.
        if let Some(confirmation_id) = explicit.as_deref()
            && acting.caller == Caller::Anonymous
            && let Some(recorded) = self.issued_to(confirmation_id)
            && let Some(adopted) = self.adopt(&acting, &recorded, true)
        {
            acting = adopted;
        }
        if let Some(state) = request.request_state.as_deref() {
            // The rare paths' futures are large: on the heap, so that every
            // call's task stays small.
            let result =
                Box::pin(self.answer_round(&acting, state, &request, &name, &arguments, cancel))
                    .await?;
            return Ok(to_call_result(&result).into());
        }

        // Until this call ends: then only this consumer's watchers re-check
        // (any call may change what is available: selection, navigation).
        let _busy = self
            .shared
            .activity
            .begin(acting.view.clone(), acting.caller == Caller::Anonymous);
        let toolset = acting.view.toolset().clone();
        let call = ToolCall::new(name, arguments).invocation_id(invocation_id);
        let result = if !toolset.has_tool(call.name()) {
            // Not in this consumer's tools: a stale name runs as its tool
            // would (its evidence, then the confirmation below); anything
            // else is not a tool at all.
            let stale = call.run_stale(&toolset, explicit.as_deref(), cancel.clone());
            let Some(result) = Box::pin(stale).await else {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{}`", super::echo::echoed(call.name())),
                    None,
                ));
            };
            result
        } else {
            call.run(&toolset, explicit.as_deref(), cancel.clone())
                .await
        };
        let Some(confirmation_id) = confirmation_of(&result) else {
            return Ok(to_call_result(&result).into());
        };
        self.issue(&acting, &confirmation_id);
        // The application's approval page, for a person far from it: in
        // the details for any client, as a URL elicitation for one that
        // takes them.
        let link = self.approval_link(&confirmation_id);
        if let Some(link) = link.clone()
            && explicit.is_none()
            && Self::takes_urls(&context)
        {
            if is_modern(&context) {
                return Ok(Box::pin(self.ask_by_url_in_round(
                    &acting,
                    call,
                    &confirmation_id,
                    link,
                    &result,
                ))
                .await);
            }
            let outcome =
                Box::pin(self.ask_by_url(&acting, &call, &confirmation_id, link, &context, cancel))
                    .await;
            let link = self.approval_link(&confirmation_id);
            return Ok(linked(&outcome, link.as_deref()).into());
        }
        // Asking the client is an approval channel only where the host
        // declared it human-facing (off by default beside an in-app
        // approver).
        let supports_elicitation = self.shared.elicitation
            && context
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.elicitation.is_some());
        // A request that needs proof of presence is the person's alone: a
        // client's answer could not approve it, so the client is not asked.
        let the_persons = || {
            self.shared
                .registry
                .confirmations()
                .find(&confirmation_id)
                .is_some_and(|pending| pending.presence_required)
        };
        if !supports_elicitation || explicit.is_some() || the_persons() {
            return Ok(linked(&result, link.as_deref()).into());
        }
        if is_modern(&context) {
            return Ok(Box::pin(self.ask_in_round(&acting, call, &confirmation_id, &result)).await);
        }
        let outcome =
            Box::pin(self.ask_while_held(&acting, &call, &confirmation_id, &context, cancel)).await;
        Ok(to_call_result(&outcome).into())
    }

    /// A 2026-07-28 retry answering our input request: the answer is
    /// recorded, and the call runs again with the evidence.
    async fn answer_round(
        &self,
        acting: &Acting,
        state: &str,
        request: &CallToolRequestParams,
        name: &str,
        arguments: &Value,
        cancel: CancellationToken,
    ) -> Result<InvocationResult, ErrorData> {
        // The clock may be host code: read before the lock.
        let now = self.shared.registry.now_ms();
        let local = self
            .shared
            .elicitations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .peek(state, now)
            .cloned();
        // Asked by another replica: its round is in the shared store.
        let shared = local.is_none();
        let pending = match local {
            Some(round) => Some(round),
            None => self.shared_round(state).await,
        };
        // Bound to the caller it was issued to: a session or the identify
        // hook's principal must be that caller; an anonymous caller's only
        // credential is the secret state itself.
        let Some((pending, acting)) = pending
            .filter(|p| p.tool == name && &p.arguments == arguments)
            .and_then(|p| {
                let adopted = self.adopt(acting, &p.consumer, p.anonymous)?;
                Some((p, adopted))
            })
        else {
            return Err(ErrorData::invalid_params(
                "unknown or mismatched requestState",
                None,
            ));
        };
        let _busy = self
            .shared
            .activity
            .begin(acting.view.clone(), acting.caller == Caller::Anonymous);
        let answer = request
            .input_responses
            .as_ref()
            .and_then(|responses| responses.get(CONFIRM_KEY));
        let action = answer
            .and_then(|a| a.get("action"))
            .and_then(|a| serde_json::from_value::<ElicitationAction>(a.clone()).ok())
            .unwrap_or(ElicitationAction::Cancel);
        let opened = action == ElicitationAction::Accept;
        let approved = approves(action, answer.and_then(|a| a.get("content")));
        self.shared
            .elicitations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(state);
        if shared {
            self.take_shared_round(state).await;
        }
        if pending.url_mode {
            // The answer only says whether the person opened the page.
            let call = ToolCall::new(name, pending.arguments);
            let outcome = Box::pin(self.answer_url_round(
                &acting,
                call,
                &pending.confirmation_id,
                opened,
                cancel,
            ))
            .await;
            return Ok(outcome);
        }
        self.answer_elicitation_anywhere(&acting, &pending.confirmation_id, approved)
            .await;
        // Denied: the retry reports CONFIRMATION_INVALID {denied}; never
        // retried further.
        let call = ToolCall::new(name, pending.arguments);
        Ok(call
            .run(
                acting.view.toolset(),
                Some(&pending.confirmation_id),
                cancel,
            )
            .await)
    }

    /// Asks in an input-required round: the state is a fresh secret naming
    /// a record kept here (never the confirmation id, which the page and
    /// audit show), so only the caller it was sent to can answer. Without
    /// system randomness the call answers two-phase.
    async fn ask_in_round(
        &self,
        acting: &Acting,
        call: ToolCall,
        confirmation_id: &str,
        first: &InvocationResult,
    ) -> CallToolResponse {
        let message = approval_prompt(&self.shared.registry, confirmation_id);
        let (Some(state), Some(schema)) = (secret_state(), approval_schema()) else {
            return to_call_result(first).into();
        };
        let ask = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        });
        self.ask_round(acting, &call, confirmation_id, state, ask, false)
            .await
    }

    /// Asks the client's person with an elicitation request while the call
    /// is held open; the request may also end in the application (answered,
    /// withdrawn, expired). Then the call runs again with the evidence.
    async fn ask_while_held(
        &self,
        acting: &Acting,
        call: &ToolCall,
        confirmation_id: &str,
        context: &RequestContext<RoleServer>,
        cancel: CancellationToken,
    ) -> InvocationResult {
        let message = approval_prompt(&self.shared.registry, confirmation_id);
        let asked = async {
            let Some(schema) = approval_schema() else {
                return false;
            };
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema: schema,
            };
            let answer = super::elicit::elicit(&context.peer, params).await;
            answer.is_some_and(|a| approves(a.action, a.content.as_ref()))
        };
        ask_the_person(
            acting.view.toolset(),
            call,
            confirmation_id,
            asked,
            |approved| self.answer_elicitation(acting, confirmation_id, approved),
            cancel,
        )
        .await
    }

    /// [`answer_elicitation`](Self::answer_elicitation) for a request
    /// pending on any replica (a round's answer may land on another).
    async fn answer_elicitation_anywhere(
        &self,
        acting: &Acting,
        confirmation_id: &str,
        approved: bool,
    ) {
        let (consumer, client) = Self::answering(acting);
        answer_on_connection_anywhere(
            &self.shared.registry,
            ELICITATION_CHANNEL,
            &consumer,
            &client,
            confirmation_id,
            approved,
        )
        .await;
    }

    /// Who answers on `acting`'s connection: its consumer and its client's
    /// name.
    fn answering(acting: &Acting) -> (Consumer, String) {
        let client = acting
            .view
            .toolset()
            .consumer()
            .label()
            .unwrap_or("mcp client")
            .to_owned();
        (
            Consumer::new(ConsumerKind::Mcp, acting.consumer.as_str()),
            client,
        )
    }

    /// The client's answer to an elicitation it showed its person: resolved
    /// through the `mcp-elicitation` agent-connection channel, which
    /// answers only this caller's own requests, recorded with the client's
    /// name. Refused (another consumer's request, no longer
    /// pending): the retry reports why; nothing else is resolved.
    fn answer_elicitation(&self, acting: &Acting, confirmation_id: &str, approved: bool) {
        let (consumer, client) = Self::answering(acting);
        answer_on_connection(
            &self.shared.registry,
            ELICITATION_CHANNEL,
            &consumer,
            &client,
            confirmation_id,
            approved,
        );
    }
}

/// The confirmation id a retry brings as evidence: rmcp hands the request's
/// `_meta` over in the context; a params `_meta` is read too.
fn evidence(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<String> {
    meta_str(request, context, CONFIRMATION_META)
}

/// The text the request's `_meta` holds under `key`.
fn meta_str(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    key: &str,
) -> Option<String> {
    context
        .meta
        .0
        .0
        .get(key)
        .or_else(|| request.meta.as_ref().and_then(|meta| meta.0.0.get(key)))
        .and_then(Value::as_str)
        .map(str::to_owned)
}
