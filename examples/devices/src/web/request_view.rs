//! A request as the person reads it: what the agent asks in their terms
//! ("Disable 3 devices: …"), what it does, what it applies to, the agent's
//! own words (labelled), who asks, the time left, and the exact request
//! behind a disclosure. Shown by the console's dialog and by the approval
//! page alike.

use agent_surface::confirmation::PendingConfirmation;
use agent_surface::context::ConsumerKind;
use dioxus::prelude::*;

use super::clock::use_now_ms;

/// `4:32` for 272 seconds.
pub(crate) fn minutes_seconds(ms: u64) -> String {
    let seconds = ms.div_ceil(1000);
    format!("{}:{:02}", seconds / 60, seconds % 60)
}

#[component]
pub(crate) fn RequestSummary(request: PendingConfirmation) -> Element {
    let now = use_now_ms();
    let input = request.display_input();
    let presentation = request.presentation.clone();
    let asker = request
        .requester
        .as_deref()
        .unwrap_or(&request.consumer_key)
        .to_owned();
    // Who the asker is, said plainly: the console's own agents by what they
    // are; an outside program's name is the one it gives itself.
    let kind = request
        .consumer_key
        .split_once(':')
        .map(|(kind, _)| kind)
        .unwrap_or_default();
    let asker_note = if kind == ConsumerKind::WebMcp.as_str() {
        " — the agent built into this browser, using this page's tools"
    } else if kind == ConsumerKind::Embedded.as_str() {
        " — the console's own scripted agent"
    } else {
        " — an agent's program, by the name it gives itself"
    };
    // Never more than the request's lifetime: the clock on screen may lag
    // the request's own by a moment.
    let lifetime = use_context::<agent_surface::Registry>()
        .confirmations()
        .ttl()
        .as_millis();
    let left = request
        .expires_at_ms
        .saturating_sub(now())
        .min(u64::try_from(lifetime).unwrap_or(u64::MAX));
    let countdown = minutes_seconds(left);
    let effect_class = format!("effect {}", request.effect.as_str());
    rsx! {
        h2 { id: "confirm-title", "{presentation.title}" }
        if !presentation.effect.is_empty() {
            p { id: "confirm-effect-text", class: "{effect_class}", "{presentation.effect}" }
        }
        if !presentation.items.is_empty() {
            ul { id: "confirm-items", class: "items", "aria-label": "What it applies to",
                for (index, item) in presentation.items.iter().enumerate() {
                    li { key: "{index}", "{item}" }
                }
            }
        }
        if let Some(note) = &presentation.agent_note {
            p { id: "confirm-agent-note", class: "agent-note",
                span { class: "muted", "The agent says, in its own words: " }
                q { "{note}" }
            }
        }
        dl {
            dt { "Asked by" }
            dd {
                span { id: "confirm-asker", "{asker}" }
                span { id: "confirm-asker-note", class: "muted", "{asker_note}" }
            }
            dt { "Time left" }
            dd {
                span {
                    id: "confirm-countdown",
                    role: "timer",
                    "aria-live": "off",
                    "{countdown}"
                }
                " — then it expires and nothing is done"
            }
        }
        details { id: "confirm-details",
            summary { "Exact request the agent sent" }
            p { class: "muted",
                "Operation "
                code { "{request.capability_id}" }
                ", effect "
                span { id: "confirm-effect", "{request.effect.as_str()}" }
            }
            pre { id: "confirm-input", "{input}" }
        }
    }
}
