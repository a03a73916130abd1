//! The approval dialog: the agent's request in the person's terms (what it
//! asks, who asks, the exact input) with Approve and Deny, answered through
//! the page's approval channel. The buttons answer exactly the request this
//! render showed, and take answers once it has been on screen for
//! [`ANSWER_DELAY_MS`](agent_surface_dioxus::ANSWER_DELAY_MS); a request that ends while on screen stays, saying
//! so, until the person dismisses it. Only the browser's own input counts
//! (see [`crate::person`]): a script's click or key answers nothing.
//!
//! Keyboard: focus moves to *Deny* (the safe choice) when a request
//! appears, the page behind is inert while the dialog is up (the app marks
//! it), and Escape denies — or dismisses an ended request.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use agent_surface::confirmation::{ConfirmationOutcome, Resolution};
use agent_surface_dioxus::{AnswerError, PendingConfirmations, use_registry};
use dioxus::prelude::*;

use crate::app::{PAGE_CHANNEL, PERSON};
use crate::person::from_input;

/// What the person is told when a script, not their input, answered.
const NOT_FROM_INPUT: &str = "Something other than your mouse or keyboard answered (a script \
                              in this page). It was ignored: nothing was approved, denied or dismissed.";

/// What the person is told about a request that ended on screen.
fn ended_text(ended: &Resolution) -> &'static str {
    match (ended.outcome, ended.reason) {
        (ConfirmationOutcome::Expired, _) => {
            "The request expired before you answered. Nothing was done."
        }
        (ConfirmationOutcome::Approved, _) => "This request was already approved.",
        (ConfirmationOutcome::Denied, _) => "This request was already denied.",
        (_, Some("cancelled")) => {
            "The agent stopped waiting for your answer, so its request was withdrawn. \
             Nothing was done."
        }
        (_, Some("input-changed")) => {
            "What the agent asked no longer matches the page (the ticked devices changed), \
             so it was withdrawn. Nothing was done."
        }
        (_, Some("unmounted")) => {
            "The page the request applied to was left, so it was withdrawn. Nothing was done."
        }
        _ => "The agent's request is no longer waiting. Nothing was done.",
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

/// The dialog for the oldest request waiting for the person: `pending` is
/// the app's (which also marks the page behind inert while one is shown).
#[component]
pub fn ApprovalDialog(pending: PendingConfirmations) -> Element {
    let registry = use_registry();
    let mut refused = use_signal(|| None::<String>);
    // Re-rendered once the presented request takes answers.
    let mut woken = use_signal(|| 0u64);
    let scheduled = use_hook(|| Rc::new(Cell::new(0u64)));
    let Some(registry) = registry else {
        return rsx! {};
    };
    let Ok(approver) = registry.confirmations().approver(PAGE_CHANNEL, PERSON) else {
        return rsx! {};
    };
    let Some(presented) = pending.presented() else {
        return rsx! {};
    };
    let answerable_at = presented.answerable_at_ms();
    let ready = woken() >= answerable_at || registry.now_ms() >= answerable_at;
    if !ready && scheduled.get() != answerable_at {
        scheduled.set(answerable_at);
        let wait = answerable_at.saturating_sub(registry.now_ms());
        spawn(async move {
            agent_surface::adapter::time::sleep(Duration::from_millis(wait)).await;
            woken.set(answerable_at);
            // "Only just appeared" no longer holds.
            refused.set(None);
        });
    }
    let request = presented.request;
    let live = presented.ended.is_none();
    let shown = request.shown();
    let deny_shown = shown.clone();
    let key_shown = shown.clone();
    let deny_approver = approver.clone();
    let key_approver = approver.clone();
    let who = request
        .requester
        .as_deref()
        .unwrap_or("An agent")
        .to_owned();
    let asks = if live { "asks" } else { "asked" };
    let presentation = request.presentation.clone();
    let input = request.display_input();
    let title = if live {
        presentation.title.clone()
    } else {
        format!("Ended: {}", presentation.title)
    };
    let disabled = if ready { "false" } else { "true" };
    let answer = move |approve: bool, trusted: bool| {
        if !trusted {
            refused.set(Some(NOT_FROM_INPUT.to_owned()));
            return;
        }
        let answered = if approve {
            pending.approve(&shown, &approver)
        } else {
            pending.deny(&deny_shown, &deny_approver)
        };
        match answered {
            Ok(_) => refused.set(None),
            Err(error) => refused.set(Some(refused_text(error))),
        }
    };
    let mut on_approve = answer.clone();
    let mut on_deny = answer;
    rsx! {
        // Clicking beside the dialog leaves focus where it is (in the
        // dialog, so Escape still answers).
        div {
            class: "backdrop",
            onmousedown: move |event: MouseEvent| event.prevent_default(),
        }
        div { class: "dialog-place",
            dialog {
                open: true,
                id: "approval",
                "aria-modal": "true",
                "aria-labelledby": "approval-title",
                onkeydown: move |event: KeyboardEvent| {
                    if event.key() != Key::Escape {
                        return;
                    }
                    if !from_input(&event) {
                        refused.set(Some(NOT_FROM_INPUT.to_owned()));
                    } else if !live {
                        refused.set(None);
                        pending.dismiss();
                    } else {
                        match pending.deny(&key_shown, &key_approver) {
                            Ok(_) => refused.set(None),
                            Err(error) => refused.set(Some(refused_text(error))),
                        }
                    }
                },
                h2 { id: "approval-title", "{title}" }
                p { class: "who", "{who} {asks}. {presentation.effect}" }
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
                        onmounted: move |element| async move {
                            let _ = element.set_focus(true).await;
                        },
                        onclick: move |event| {
                            if from_input(&event) {
                                refused.set(None);
                                pending.dismiss();
                            } else {
                                refused.set(Some(NOT_FROM_INPUT.to_owned()));
                            }
                        },
                        "Dismiss"
                    }
                } else {
                    div { class: "answers",
                        button {
                            id: "deny",
                            "aria-disabled": disabled,
                            onmounted: move |element| async move {
                                let _ = element.set_focus(true).await;
                            },
                            onclick: move |event| on_deny(false, from_input(&event)),
                            "Deny"
                        }
                        button {
                            id: "approve",
                            class: "danger",
                            "aria-disabled": disabled,
                            onclick: move |event| on_approve(true, from_input(&event)),
                            "{presentation.action}"
                        }
                    }
                }
            }
        }
    }
}
