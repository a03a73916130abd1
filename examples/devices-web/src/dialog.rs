//! The approval dialog: the agent's request in the person's terms (what it
//! asks, who asks, the exact input) with Approve and Deny, answered through
//! the page's approval channel. The buttons answer exactly the request this
//! render showed; a request that ends while on screen stays, saying so,
//! until the person dismisses it. Approve counts only the browser's own
//! input (see [`crate::person`]): a script's click approves nothing.

use agent_surface::confirmation::{ConfirmationOutcome, Resolution};
use agent_surface_dioxus::{AnswerError, use_pending_confirmations, use_registry};
use dioxus::prelude::*;

use crate::app::{PAGE_CHANNEL, PERSON};
use crate::person::from_input;

/// What the person is told when a script, not their input, pressed Approve.
const NOT_FROM_INPUT: &str = "Something other than your mouse or keyboard pressed Approve \
                              (a script in this page). It was ignored: nothing was approved.";

/// What the person is told about a request that ended on screen.
fn ended_text(ended: &Resolution) -> &'static str {
    match ended.outcome {
        ConfirmationOutcome::Expired => {
            "The request expired before you answered. Nothing was done."
        }
        ConfirmationOutcome::Approved => "This request was already approved.",
        ConfirmationOutcome::Denied => "This request was already denied.",
        _ => {
            "The agent's request is no longer waiting (the page it applied to changed or was \
              left). Nothing was done."
        }
    }
}

/// What the person is told when an answer did not count.
fn refused_text(error: AnswerError) -> String {
    match error {
        AnswerError::TooSoon => {
            "The request had only just appeared: look at it, then answer.".to_owned()
        }
        AnswerError::Refused(error) => format!("Your answer was not taken: {error}."),
        _ => "Your answer was not taken.".to_owned(),
    }
}

/// The dialog for the oldest request waiting for the person.
#[component]
pub fn ApprovalDialog() -> Element {
    let pending = use_pending_confirmations();
    let registry = use_registry();
    let mut refused = use_signal(|| None::<String>);
    let Some(approver) =
        registry.and_then(|registry| registry.confirmations().approver(PAGE_CHANNEL, PERSON).ok())
    else {
        return rsx! {};
    };
    let Some(presented) = pending.presented() else {
        return rsx! {};
    };
    let request = presented.request;
    let shown = request.shown();
    let deny_shown = shown.clone();
    let deny_approver = approver.clone();
    let who = request
        .requester
        .as_deref()
        .unwrap_or("An agent")
        .to_owned();
    let presentation = request.presentation.clone();
    let input = request.display_input();
    rsx! {
        div { class: "backdrop",
            dialog {
                open: true,
                id: "approval",
                "aria-modal": "true",
                "aria-labelledby": "approval-title",
                h2 { id: "approval-title", "{presentation.title}" }
                p { class: "who", "{who} asks. {presentation.effect}" }
                if !presentation.items.is_empty() {
                    ul {
                        for item in presentation.items.iter() {
                            li { "{item}" }
                        }
                    }
                }
                if let Some(note) = presentation.agent_note.as_ref() {
                    p { class: "note",
                        span { class: "label", "The agent says: " }
                        q { "{note}" }
                    }
                }
                details {
                    summary { "The exact request" }
                    pre { "{input}" }
                }
                if let Some(why) = refused() {
                    p { class: "refused", role: "alert", "{why}" }
                }
                if let Some(ended) = presented.ended.as_ref() {
                    p { class: "ended", role: "status", "{ended_text(ended)}" }
                    button {
                        id: "dismiss",
                        onclick: move |_| {
                            refused.set(None);
                            pending.dismiss();
                        },
                        "Dismiss"
                    }
                } else {
                    div { class: "answers",
                        button {
                            id: "deny",
                            autofocus: true,
                            onclick: move |_| match pending.deny(&deny_shown, &deny_approver) {
                                Ok(_) => refused.set(None),
                                Err(error) => refused.set(Some(refused_text(error))),
                            },
                            "Deny"
                        }
                        button {
                            id: "approve",
                            class: "danger",
                            onclick: move |event| {
                                if !from_input(&event) {
                                    refused.set(Some(NOT_FROM_INPUT.to_owned()));
                                    return;
                                }
                                match pending.approve(&shown, &approver) {
                                    Ok(_) => refused.set(None),
                                    Err(error) => refused.set(Some(refused_text(error))),
                                }
                            },
                            "{presentation.action}"
                        }
                    }
                }
            }
        }
    }
}
