//! URL-mode elicitation: the application's own approval page, for a
//! person far from the application.
//!
//! A host that serves an approval page per request
//! ([`McpServerBuilder::approval_page`](super::McpServerBuilder::approval_page))
//! gives every `CONFIRMATION_REQUIRED` its link (`details.approvalUrl`), for
//! a client to show its person. A client that declares `elicitation.url`
//! (MCP 2025-11-25) is sent the link as a URL-mode elicitation instead, and
//! its call is held while the person opens the page, signs in and answers
//! there; when the request ends the server sends
//! `notifications/elicitation/complete` and the held call runs once with
//! the evidence. On 2026-07-28, which has no server requests, the link is
//! an input request of the call's input-required round, and the retry is
//! held the same way.
//!
//! The client's answer to a URL elicitation only says whether its person
//! opened the page: it approves nothing. Only the person's answer on the
//! page does, through the host's own approval channel (with the proof of
//! presence the registry requires).

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, CallToolResult, CustomNotification, ElicitRequest, ElicitRequestParams,
    ElicitationAction, ServerNotification,
};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::McpSession;
use super::caller::Acting;
use super::convert::to_call_result;
use crate::adapter::{ToolCall, ask_the_person};
use crate::confirmation::PendingConfirmation;
use crate::error::ErrorCode;
use crate::invoke::InvocationResult;

/// The host's approval page for a request: its URL, or `None`.
pub(super) type ApprovalPage = Arc<dyn Fn(&PendingConfirmation) -> Option<String> + Send + Sync>;

/// The method of the notification that a URL elicitation's interaction
/// ended (MCP 2025-11-25; rmcp has no type for it).
const COMPLETE: &str = "notifications/elicitation/complete";

/// Most bytes of an approval URL the host hands out.
const MAX_URL_BYTES: usize = 2048;

/// `result` for the client: a `CONFIRMATION_REQUIRED` carries the person's
/// approval page (`details.approvalUrl`) when there is one.
pub(super) fn linked(result: &InvocationResult, link: Option<&str>) -> CallToolResult {
    match (result.error(), link) {
        (Some(error), Some(link)) if error.code() == ErrorCode::ConfirmationRequired => {
            let mut value = serde_json::to_value(error).unwrap_or(Value::Null);
            if let Some(object) = value.as_object_mut() {
                object.insert(
                    "message".to_owned(),
                    Value::from(
                        "The person must approve this call on the application's approval page: \
                         show them details.approvalUrl, then retry with the confirmationId \
                         once they have.",
                    ),
                );
                if let Some(details) = object.get_mut("details").and_then(Value::as_object_mut) {
                    details.insert("approvalUrl".to_owned(), Value::from(link));
                }
            }
            CallToolResult::structured_error(value)
        }
        _ => to_call_result(result),
    }
}

/// What the client shows its person with the link.
fn message(pending: Option<&PendingConfirmation>) -> String {
    match pending {
        Some(pending) => format!(
            "An agent asks for your approval: {}. Open this page to see the request and answer it.",
            crate::adapter::text::escape(&pending.presentation.title)
        ),
        None => "Open this page to see the agent's request and answer it.".to_owned(),
    }
}

impl McpSession {
    /// The host's approval page for `confirmation_id` while it is pending
    /// (the hook is host code: contained, and its URL bounded).
    pub(super) fn approval_link(&self, confirmation_id: &str) -> Option<String> {
        let page = self.shared.approval_page.as_ref()?;
        let pending = self.shared.registry.confirmations().find(confirmation_id)?;
        let link = crate::adapter::contain::catch(|| page(&pending)).ok()??;
        (link.len() <= MAX_URL_BYTES && !link.chars().any(char::is_control)).then_some(link)
    }

    /// Whether the client takes URL-mode elicitations.
    pub(super) fn takes_urls(context: &RequestContext<RoleServer>) -> bool {
        context.client_capabilities().is_some_and(|capabilities| {
            capabilities
                .elicitation
                .as_ref()
                .is_some_and(|elicitation| elicitation.url.is_some())
        })
    }

    /// Sends the person the approval page while the call is held; the call
    /// runs again once the request ends in the application (or the client
    /// says its person will not open it), and the client is told the
    /// interaction completed.
    pub(super) async fn ask_by_url(
        &self,
        acting: &Acting,
        call: &ToolCall,
        confirmation_id: &str,
        link: String,
        context: &RequestContext<RoleServer>,
        cancel: CancellationToken,
    ) -> InvocationResult {
        let confirmations = self.shared.registry.confirmations();
        let text = message(confirmations.find(confirmation_id).as_ref());
        let elicitation_id = self.shared.registry.mint_invocation_id();
        let peer = context.peer.clone();
        let id = elicitation_id.clone();
        let opened = async move {
            let params = ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: text,
                url: link,
                elicitation_id: id,
            };
            let answer = super::elicit::elicit(&peer, params).await;
            // Accepted: the person opens the page; the wait goes on until
            // they answer there. Declined, cancelled or failed: the call
            // returns, the request still waiting for the person.
            match answer {
                Some(answer) if answer.action == ElicitationAction::Accept => {
                    std::future::pending::<bool>().await
                }
                _ => false,
            }
        };
        let result = ask_the_person(
            acting.view.toolset(),
            call,
            confirmation_id,
            opened,
            |_| {},
            cancel,
        )
        .await;
        if confirmations.find(confirmation_id).is_none() {
            let notice = CustomNotification::new(
                COMPLETE,
                Some(serde_json::json!({ "elicitationId": elicitation_id })),
            );
            let _ = context
                .peer
                .send_notification(ServerNotification::CustomNotification(notice))
                .await;
        }
        result
    }

    /// On 2026-07-28: the approval page as the call's input request; the
    /// retry is held until the person answered there.
    pub(super) async fn ask_by_url_in_round(
        &self,
        acting: &Acting,
        call: ToolCall,
        confirmation_id: &str,
        link: String,
        first: &InvocationResult,
    ) -> CallToolResponse {
        let confirmations = self.shared.registry.confirmations();
        let text = message(confirmations.find(confirmation_id).as_ref());
        let Some(state) = super::convert::secret_state() else {
            return linked(first, Some(&link)).into();
        };
        let ask = ElicitRequest::new(ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: text,
            url: link,
            elicitation_id: String::new(),
        });
        self.ask_round(acting, &call, confirmation_id, state, ask, true)
            .await
    }

    /// The retry of a URL-mode round: held until the person answered on the
    /// page when the client says its person opened it; at once otherwise.
    pub(super) async fn answer_url_round(
        &self,
        acting: &Acting,
        call: ToolCall,
        confirmation_id: &str,
        opened: bool,
        cancel: CancellationToken,
    ) -> InvocationResult {
        if !opened {
            return call
                .run(acting.view.toolset(), Some(confirmation_id), cancel)
                .await;
        }
        ask_the_person(
            acting.view.toolset(),
            &call,
            confirmation_id,
            std::future::pending(),
            |_| {},
            cancel,
        )
        .await
    }
}
