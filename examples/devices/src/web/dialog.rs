//! The host's confirmation dialog, in the person's terms: what the agent
//! asks ("Disable 3 devices: …"), who asks, what it does, the time left,
//! and a red button naming the action; the exact request behind a
//! disclosure. Answered through the console's approval channel.
//!
//! The buttons answer exactly the request this render showed (its
//! [`ShownRequest`](agent_surface::confirmation::ShownRequest)). A request
//! that ends while it is on screen (withdrawn, expired, answered in another
//! tab) stays on screen as ended, saying so, until the person dismisses it:
//! the next request never takes its place under the cursor.
//!
//! Keyboard (WAI-ARIA modal dialog pattern, with the page's script in
//! `mod.rs`): focus moves into the dialog (to *Deny*, the safe choice), Tab
//! stays inside it, Escape denies (or dismisses an ended request), and
//! focus returns to where it was when the dialog closes.

use agent_surface::confirmation::{ConfirmationOutcome, Resolution};
use agent_surface_dioxus::{ANSWER_DELAY_MS, use_pending_confirmations};
use dioxus::prelude::*;

use super::clock::use_now_ms;
use super::prove::ProveAndApprove;
use super::request_view::RequestSummary;
use super::{SessionEnd, Shared};

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
            Some("input-changed") => "What the agent asked no longer matches the page (for \
                                      example the selection moved), so it was withdrawn. \
                                      Nothing was done."
                .to_owned(),
            Some("agent-left") => "The agent that asked has disconnected, so its request was \
                                   withdrawn. Nothing was done."
                .to_owned(),
            Some("cancelled") => "The agent stopped waiting for your answer, so its request \
                                  was withdrawn. Nothing was done."
                .to_owned(),
            Some("displaced") => "Too many requests were waiting, so this agent's oldest one \
                                  was withdrawn to make room for another agent's. Nothing \
                                  was done."
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

/// Whether the request `key` takes answers: from `answerable_at` (registry
/// clock, ms) on. Until then its buttons show as waiting, and the
/// component renders again when they wake.
pub(crate) fn use_armed(answerable_at: u64, key: String) -> bool {
    let now = use_now_ms();
    let mut woken = use_signal(|| None::<String>);
    let armed = now() >= answerable_at || woken.read().as_deref() == Some(key.as_str());
    if !armed {
        let wait = answerable_at.saturating_sub(now());
        spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
            woken.set(Some(key));
        });
    }
    armed
}

#[component]
pub(crate) fn ConfirmDialog() -> Element {
    let shared = use_context::<Shared>();
    let session = use_context::<SessionEnd>();
    let pending = use_pending_confirmations();
    let Some(presented) = pending.presented() else {
        return rsx! {};
    };
    let request = presented.request;
    let presentation = request.presentation.clone();
    if let Some(ended) = presented.ended {
        let text = ended_text(&ended);
        return rsx! {
            Frame { state: "ended", described_by: "confirm-ended", confirmation: "{request.confirmation_id}",
                    h2 { id: "confirm-title", "Request no longer waiting" }
                    p { id: "confirm-ended", "{text}" }
                    p { id: "confirm-summary", class: "muted", "{presentation.title}" }
                    div { class: "actions",
                        button {
                            id: "dismiss",
                            "data-escape": "true",
                            onclick: move |_| pending.dismiss(),
                            "OK"
                        }
                    }
            }
        };
    }
    let waiting = pending.list().len();
    // A new request takes no answer at first (a click on its way, or the
    // second half of a double-click, was meant for what was there before):
    // its buttons wake at `answerable_at_ms`.
    let armed = use_armed(
        presented.since_ms + ANSWER_DELAY_MS,
        request.confirmation_id.to_string(),
    );
    let shown = request.shown();
    let deny_shown = shown.clone();
    let approver = shared.approver.clone();
    let deny_approver = approver.clone();
    let needs_proof = request.presence_required;
    let proving = request.clone();
    let deny_session = session.clone();
    rsx! {
        Frame { state: "live", described_by: "confirm-effect-text", confirmation: "{request.confirmation_id}",
                p { class: "eyebrow", "An agent asks for your approval" }
                RequestSummary { request: request.clone() }
                if waiting > 1 {
                    p { class: "more", "{waiting - 1} more request(s) waiting after this one" }
                }
                if needs_proof {
                    ProveAndApprove { request: proving, armed, pending }
                }
                if !armed {
                    p { id: "confirm-waking", class: "muted waking",
                        "The buttons wake in a moment, so that a click meant for something else never answers this."
                    }
                }
                div { class: "actions",
                    button {
                        id: "deny",
                        "data-escape": "true",
                        "aria-keyshortcuts": "Escape",
                        title: "Deny (Esc)",
                        "aria-disabled": if armed { "false" } else { "true" },
                        onclick: move |_| {
                            if let Some(approver) = &deny_approver
                                && deny_session.live()
                            {
                                let _ = pending.deny(&deny_shown, approver);
                            }
                        },
                        "Deny"
                    }
                    if !needs_proof {
                        button {
                            id: "approve",
                            class: "danger",
                            disabled: approver.is_none() || !armed,
                            onclick: move |_| {
                                if let Some(approver) = &approver
                                    && session.live()
                                {
                                    let _ = pending.approve(&shown, approver);
                                }
                            },
                            "{presentation.action}"
                        }
                    }
                }
        }
    }
}

/// The modal around either state: a labelled `alertdialog` over a backdrop.
#[component]
fn Frame(
    state: &'static str,
    described_by: &'static str,
    confirmation: String,
    children: Element,
) -> Element {
    rsx! {
        div { class: "backdrop",
            div {
                id: "confirm-dialog",
                class: "dialog",
                role: "alertdialog",
                "aria-modal": "true",
                "aria-labelledby": "confirm-title",
                "aria-describedby": "{described_by}",
                "data-state": "{state}",
                "data-confirmation": "{confirmation}",
                {children}
            }
        }
    }
}
