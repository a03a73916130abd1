//! The host's confirmation dialog: the oldest pending request with its
//! summary, effect, requester and the exact input, approved or denied by
//! the person.

use agent_surface_dioxus::use_pending_confirmations;
use dioxus::prelude::*;

#[component]
pub(crate) fn ConfirmDialog() -> Element {
    let pending = use_pending_confirmations();
    let Some(request) = pending.first() else {
        return rsx! {};
    };
    let waiting = pending.list().len();
    let approve_id = request.confirmation_id.to_string();
    let deny_id = approve_id.clone();
    let input = request.display_input();
    let effect = request.effect.as_str();
    rsx! {
        div { class: "backdrop",
            div {
                id: "confirm-dialog",
                class: "dialog",
                role: "dialog",
                "aria-modal": "true",
                h2 { "An agent asks for your approval" }
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
                            let _ = pending.deny(&deny_id);
                        },
                        "Deny"
                    }
                    button {
                        id: "approve",
                        class: "primary",
                        onclick: move |_| {
                            let _ = pending.approve(&approve_id);
                        },
                        "Approve"
                    }
                }
            }
        }
    }
}
