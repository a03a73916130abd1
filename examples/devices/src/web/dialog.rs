//! The host's confirmation dialog: the request it presents, with its
//! summary, effect, requester and the exact input, answered by the person
//! through the console's approval channel.
//!
//! The buttons answer exactly the request this render showed (its
//! [`ShownRequest`](agent_surface::confirmation::ShownRequest)). A request
//! that ends while it is on screen (withdrawn, expired, answered in another
//! tab) stays on screen as ended, saying so, until the person dismisses it:
//! the next request never takes its place under the cursor.

use agent_surface::confirmation::{ConfirmationOutcome, Resolution};
use agent_surface_dioxus::use_pending_confirmations;
use dioxus::prelude::*;

use super::Shared;

/// What the person is told about a request that ended on screen.
fn ended_text(ended: &Resolution) -> String {
    match ended.outcome {
        ConfirmationOutcome::Withdrawn => match ended.reason {
            Some("replaced") => "The agent's request was withdrawn: the console was reloaded or \
                                 opened in another tab, so it no longer applies. Nothing was done."
                .to_owned(),
            Some("unmounted") => "The agent's request was withdrawn: the page it applied to was \
                                  left or closed. Nothing was done."
                .to_owned(),
            _ => "The agent's request is no longer waiting. Nothing was done.".to_owned(),
        },
        ConfirmationOutcome::Expired => {
            "The agent's request expired before you answered. Nothing was done.".to_owned()
        }
        ConfirmationOutcome::Approved | ConfirmationOutcome::Denied => format!(
            "This request was already {} {}.",
            ended.outcome.as_str(),
            match ended.approver.as_deref() {
                Some(approver) => format!("by {approver} in another tab"),
                None => "elsewhere".to_owned(),
            }
        ),
    }
}

#[component]
pub(crate) fn ConfirmDialog() -> Element {
    let shared = use_context::<Shared>();
    let pending = use_pending_confirmations();
    let Some(presented) = pending.presented() else {
        return rsx! {};
    };
    let request = presented.request;
    let input = request.display_input();
    let effect = request.effect.as_str();
    if let Some(ended) = presented.ended {
        let text = ended_text(&ended);
        return rsx! {
            div { class: "backdrop",
                div {
                    id: "confirm-dialog",
                    class: "dialog",
                    role: "alertdialog",
                    "aria-modal": "true",
                    "aria-labelledby": "confirm-title",
                    "data-state": "ended",
                    h2 { id: "confirm-title", "Request no longer waiting" }
                    p { id: "confirm-ended", "{text}" }
                    p { id: "confirm-summary", class: "muted", "{request.summary}" }
                    div { class: "actions",
                        button {
                            id: "dismiss",
                            autofocus: true,
                            onclick: move |_| pending.dismiss(),
                            "OK"
                        }
                    }
                }
            }
        };
    }
    let waiting = pending.list().len();
    let shown = request.shown();
    let deny_shown = shown.clone();
    let approver = shared.approver.clone();
    let deny_approver = approver.clone();
    rsx! {
        div { class: "backdrop",
            div {
                id: "confirm-dialog",
                class: "dialog",
                role: "alertdialog",
                "aria-modal": "true",
                "aria-labelledby": "confirm-title",
                "data-state": "live",
                "data-confirmation": "{request.confirmation_id}",
                h2 { id: "confirm-title", "An agent asks for your approval" }
                p { id: "confirm-summary", "{request.summary}" }
                dl {
                    dt { "Effect" }
                    dd { id: "confirm-effect", "{effect}" }
                    dt { "Operation" }
                    dd { code { "{request.capability_id}" } }
                    dt { "Asked by" }
                    dd { code { "{request.consumer_key}" } }
                    dt { "Expires" }
                    dd { "{request.expires_at}" }
                }
                p { "Exact input:" }
                pre { id: "confirm-input", "{input}" }
                if waiting > 1 {
                    p { class: "more", "{waiting - 1} more waiting" }
                }
                div { class: "actions",
                    button {
                        id: "deny",
                        onclick: move |_| {
                            if let Some(approver) = &deny_approver {
                                let _ = pending.deny(&deny_shown, approver);
                            }
                        },
                        "Deny"
                    }
                    button {
                        id: "approve",
                        class: "danger",
                        disabled: approver.is_none(),
                        onclick: move |_| {
                            if let Some(approver) = &approver {
                                let _ = pending.approve(&shown, approver);
                            }
                        },
                        "Approve"
                    }
                }
            }
        }
    }
}
