//! The approval page of one request (`/approve?request=…`), for a person
//! far from the console: a remote agent's client showed them the link. It
//! shows the request as the dialog does, and takes the same answers —
//! the person's passkey or the terminal's code for a request that needs
//! proof, and Deny — through the console's approval channel. It mounts
//! nothing: the console's tabs and their requests are untouched.

use agent_surface::confirmation::{ConfirmationOutcome, Resolution};
use agent_surface_dioxus::use_pending_confirmations;
use dioxus::prelude::*;

use super::dialog::use_armed;
use super::passkey_offer::PasskeysChanged;
use super::prove::ProveAndApprove;
use super::request_view::RequestSummary;
use super::{SessionEnd, Shared};

/// The token of the approval page a tab shows (64 hex digits, checked
/// before it gets here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApprovalToken(pub(crate) String);

/// Whether `token` has the form of an approval link's token.
pub(crate) fn well_formed(token: &str) -> bool {
    token.len() == 64
        && token
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What the person is told about a request that is no longer waiting.
fn outcome_text(resolution: Option<&Resolution>) -> String {
    let Some(resolution) = resolution else {
        return "This request is no longer waiting. Nothing more can be done here.".to_owned();
    };
    match resolution.outcome {
        ConfirmationOutcome::Approved => format!(
            "Approved{}. The agent goes on; you can close this page.",
            resolution
                .approver
                .as_deref()
                .map(|who| format!(" by {who}"))
                .unwrap_or_default()
        ),
        ConfirmationOutcome::Denied => {
            "Denied. Nothing was done; you can close this page.".to_owned()
        }
        ConfirmationOutcome::Expired => {
            "The request expired before anyone answered. Nothing was done.".to_owned()
        }
        ConfirmationOutcome::Withdrawn => {
            "The request was withdrawn before anyone answered (the agent or the console moved on). \
             Nothing was done."
                .to_owned()
        }
    }
}

/// A tab showing one approval page.
pub(crate) fn approval_root() -> Element {
    let shared = use_context::<Shared>();
    let session = use_context::<SessionEnd>();
    let token = use_context::<ApprovalToken>();
    use_context_provider(|| PasskeysChanged(Signal::new(0)));
    let pending = use_pending_confirmations();
    let linked = shared.pages.request_for(&token.0);
    // A request takes no answer in its first moment on screen, here as in
    // the dialog: timed from when this page first showed it.
    let registry = use_context::<agent_surface::Registry>();
    let opened_ms = use_hook(|| registry.now_ms());
    let armed = use_armed(
        opened_ms.saturating_add(agent_surface_dioxus::ANSWER_DELAY_MS),
        token.0.clone(),
    );
    let live = linked.as_ref().and_then(|(id, digest)| {
        pending
            .list()
            .into_iter()
            .find(|p| p.confirmation_id == *id && p.digest == *digest)
    });
    let body = match (&linked, live) {
        (None, _) => rsx! {
            h1 { id: "approval-title", "This approval link does not work" }
            p { id: "approval-state",
                "It was never issued by this console, or it is too old. Ask the agent to ask again: it gets a new link."
            }
        },
        (Some((id, _)), None) => {
            let resolution = shared.app.registry().confirmations().resolution(id);
            let text = outcome_text(resolution.as_ref());
            rsx! {
                h1 { id: "approval-title", "Request no longer waiting" }
                p { id: "approval-state", "{text}" }
            }
        }
        (Some(_), Some(request)) => {
            let shown = request.shown();
            let approver = shared.approver.clone();
            let needs_proof = request.presence_required;
            let approve_shown = shown.clone();
            let approve_with = approver.clone();
            let approve_session = session.clone();
            rsx! {
                p { class: "eyebrow", "An agent asks for your approval" }
                RequestSummary { request: request.clone() }
                if needs_proof {
                    ProveAndApprove { request: request.clone(), armed, pending }
                }
                div { class: "actions",
                    button {
                        id: "deny",
                        "aria-disabled": if armed { "false" } else { "true" },
                        onclick: move |_| {
                            if let Some(approver) = &approver
                                && session.live()
                            {
                                let _ = pending.deny(&shown, approver);
                            }
                        },
                        "Deny"
                    }
                    if !needs_proof {
                        button {
                            id: "approve",
                            class: "danger",
                            disabled: !armed,
                            onclick: move |_| {
                                if let Some(approver) = &approve_with
                                    && approve_session.live()
                                {
                                    let _ = pending.approve(&approve_shown, approver);
                                }
                            },
                            "{request.presentation.action}"
                        }
                    }
                }
            }
        }
    };
    rsx! {
        header { h1 { "Devices console" } span { class: "user", "Approval page" } }
        main { id: "approval-page", class: "approval dialog", {body} }
    }
}
