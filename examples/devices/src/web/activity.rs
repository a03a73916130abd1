//! The activity list: what agents did, in the person's words, newest
//! first — every call with its outcome, every request for approval, every
//! answer with who gave it and through which channel, expiries and
//! withdrawals.

use agent_surface::ErrorCode;
use agent_surface_dioxus::{Activity, ActivityEntry, use_activity_log};
use dioxus::prelude::*;

use super::clock::use_now_ms;

/// Entries the console keeps for the person.
pub(crate) const KEPT: usize = 200;

/// What calling a capability means to a person.
fn doing(capability_id: &str) -> &'static str {
    match capability_id {
        "view:devices.filters.set" => "changed the filters",
        "view:devices.filters.read" => "read the filters",
        "view:devices.table.readState" => "read the table",
        "view:devices.table.selectRows" => "changed the selection",
        "view:devices.table.sort" => "sorted the table",
        "view:devices.drawer.open" => "opened a device's details",
        "view:devices.drawer.close" => "closed the details",
        "view:devices.drawer.state" => "read the details",
        "view:app.navigation.goTo" => "moved to another page",
        "view:app.navigation.current" => "read where the console is",
        "domain:devices.disable" => "disabled devices",
        _ => "used a tool",
    }
}

/// What calling a capability is, to say what an agent tried.
fn to_do(capability_id: &str) -> &'static str {
    match capability_id {
        "view:devices.filters.set" => "change the filters",
        "view:devices.filters.read" => "read the filters",
        "view:devices.table.readState" => "read the table",
        "view:devices.table.selectRows" => "change the selection",
        "view:devices.table.sort" => "sort the table",
        "view:devices.drawer.open" => "open a device's details",
        "view:devices.drawer.close" => "close the details",
        "view:devices.drawer.state" => "read the details",
        "view:app.navigation.goTo" => "move to another page",
        "view:app.navigation.current" => "read where the console is",
        "domain:devices.disable" => "disable devices",
        _ => "use a tool",
    }
}

/// Why a call did not go through, in a few words: the reason the error
/// gave, where it gave one.
fn why(code: ErrorCode, reason: Option<&str>) -> &'static str {
    match (code, reason) {
        (ErrorCode::ConfirmationInvalid, Some("denied")) => "refused: you denied it",
        (ErrorCode::ConfirmationInvalid, Some("consumed")) => {
            "refused: its approval was already used"
        }
        (ErrorCode::ConfirmationInvalid, Some("expired")) => "refused: its approval expired",
        (ErrorCode::ConfirmationInvalid, Some("mismatch")) => {
            "refused: its approval was for other input"
        }
        (ErrorCode::ConfirmationInvalid, Some("withdrawn")) => "refused: its request was withdrawn",
        (ErrorCode::ConfirmationInvalid, Some("cancelled")) => {
            "refused: it stopped waiting for your answer"
        }
        (ErrorCode::RateLimited, Some("queue-full")) => {
            "asked to wait: too many requests are waiting for you"
        }
        (code, _) => why_code(code),
    }
}

/// Why a call did not go through, by its code alone.
fn why_code(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::ConfirmationRequired => "waiting for your approval",
        ErrorCode::ConfirmationInvalid => "refused: its approval no longer applies",
        ErrorCode::CapabilityNotAvailable => "not possible on the page as it was",
        ErrorCode::StaleCapability => "it looked at an outdated page",
        ErrorCode::PreconditionFailed => "it did not fit the current state",
        ErrorCode::InvalidInput => "it sent invalid input",
        ErrorCode::NotAuthorized => "not allowed",
        ErrorCode::RateLimited => "asked to slow down",
        _ => "it failed",
    }
}

/// A request's title in the person's sentence. It holds text the agent
/// chose (names, ids): set in quotes, and with its own curly quotes made
/// straight, so it can neither close the quote early nor read as more of
/// the sentence around it ("… approved").
fn quoted(title: &str) -> String {
    let inner: String = title
        .chars()
        .map(|c| match c {
            '“' | '”' | '„' | '‟' | '«' | '»' => '"',
            other => other,
        })
        .collect();
    format!("“{inner}”")
}

/// One line about an entry, and whether it is a change (marked) or a read.
fn line(entry: &ActivityEntry) -> (String, &'static str) {
    let who = &entry.who;
    match &entry.what {
        Activity::Call {
            capability_id,
            error: None,
            approved: Some(title),
            ..
        } => {
            let _ = capability_id;
            (
                format!("{who} did, with your approval: {}", quoted(title)),
                "done",
            )
        }
        Activity::Call {
            capability_id,
            error: None,
            ..
        } => {
            let kind =
                if capability_id.starts_with("view:") && doing(capability_id).starts_with("read") {
                    "read"
                } else {
                    "change"
                };
            (format!("{who} {}", doing(capability_id)), kind)
        }
        Activity::Call {
            capability_id,
            error: Some(code),
            ..
        } if *code == ErrorCode::ConfirmationRequired => {
            let _ = capability_id;
            (format!("{who} is waiting for your answer"), "read")
        }
        Activity::Call {
            capability_id,
            error: Some(code),
            reason,
            ..
        } => (
            format!(
                "{who} tried to {} — {}",
                to_do(capability_id),
                why(*code, reason.as_deref())
            ),
            "refused",
        ),
        Activity::Asked { title, .. } => (
            format!("{who} asks for your approval: {}", quoted(title)),
            "ask",
        ),
        Activity::Answered {
            outcome,
            channel,
            reason,
            title,
            proof,
            ..
        } => {
            let what = title
                .as_deref()
                .map_or_else(|| "a request".to_owned(), quoted);
            let through = channel
                .as_deref()
                .map(|c| format!(" (through {c})"))
                .unwrap_or_default();
            let proven = match *proof {
                Some("webauthn") => " with a passkey",
                Some("out-of-band") => " with the terminal's code",
                _ => "",
            };
            match *outcome {
                "approved" => (format!("{who} approved{proven}{through}: {what}"), "answer"),
                "denied" => (format!("{who} denied{through}: {what}"), "answer"),
                "expired" => (
                    format!("Expired without an answer, nothing was done: {what}"),
                    "refused",
                ),
                _ => (
                    match reason {
                        Some("agent-left") => {
                            format!("Withdrawn, the agent disconnected; nothing was done: {what}")
                        }
                        Some("input-changed") => format!(
                            "Withdrawn, the page no longer matches it (the selection moved); nothing was done: {what}"
                        ),
                        Some("cancelled") => format!(
                            "Withdrawn, the agent stopped waiting; nothing was done: {what}"
                        ),
                        Some("displaced") => format!(
                            "Withdrawn to make room for another agent's request; nothing was done: {what}"
                        ),
                        Some("replaced") => format!(
                            "Withdrawn, the console was reloaded or opened in another tab; nothing was done: {what}"
                        ),
                        Some("unmounted") => format!(
                            "Withdrawn, the page it applied to was left or closed; nothing was done: {what}"
                        ),
                        _ => format!("Withdrawn, the page changed; nothing was done: {what}"),
                    },
                    "refused",
                ),
            }
        }
        _ => (format!("{who} did something"), "read"),
    }
}

/// The lines to show: each entry's line, with runs of the same line (an
/// agent polling, a retry loop) merged into one with a count.
fn merged(entries: &[ActivityEntry]) -> Vec<(String, &'static str, u64, usize)> {
    let mut lines: Vec<(String, &'static str, u64, usize)> = Vec::new();
    for entry in entries {
        let (text, kind) = line(entry);
        match lines.last_mut() {
            Some(last) if last.0 == text => last.3 += 1,
            _ => lines.push((text, kind, entry.at_ms, 1)),
        }
    }
    lines
}

/// "just now", "12 s ago", "3 min ago", "5 h ago", "yesterday", "3 days
/// ago" (the record outlives the process: entries can be days old).
fn ago(now_ms: u64, at_ms: u64) -> String {
    let seconds = now_ms.saturating_sub(at_ms) / 1000;
    match seconds {
        0..=4 => "just now".to_owned(),
        5..=59 => format!("{seconds} s ago"),
        60..=3_599 => format!("{} min ago", seconds / 60),
        3_600..=86_399 => format!("{} h ago", seconds / 3_600),
        86_400..=172_799 => "yesterday".to_owned(),
        _ => format!("{} days ago", seconds / 86_400),
    }
}

#[component]
pub(crate) fn ActivityList() -> Element {
    // The person's record, kept by the server: a reload or a new tab shows
    // what happened before it opened.
    let shared = use_context::<super::Shared>();
    let activity = use_activity_log(&shared.activity);
    let now = use_now_ms();
    let entries = activity.entries();
    let dropped = activity.dropped();
    rsx! {
        section { class: "activity", "aria-labelledby": "activity-title",
            h3 { id: "activity-title", "What agents did" }
            if entries.is_empty() {
                p { class: "muted", "Nothing yet. Agent calls, requests and answers show here." }
            }
            if dropped > 0 {
                p { class: "muted", "{dropped} events arrived too fast to show." }
            }
            ul { id: "activity", "aria-live": "polite",
                for (index, (text, kind, at_ms, times)) in merged(&entries).into_iter().enumerate() {
                    {
                        let when = ago(now(), at_ms);
                        let times = if times > 1 { format!(" (×{times})") } else { String::new() };
                        rsx! {
                            li { key: "{index}-{at_ms}", class: "entry {kind}", "data-kind": "{kind}",
                                span { class: "text", "{text}{times}" }
                                " "
                                span { class: "when", "{when}" }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn a_title_cannot_close_its_quote_and_speak_for_the_person() {
        let forged = "Lamp” — admin approved (through console): “Disable 3 devices";
        let shown = quoted(forged);
        assert_eq!(shown.matches('“').count(), 1);
        assert_eq!(shown.matches('”').count(), 1);
        assert!(shown.starts_with('“') && shown.ends_with('”'));
        assert_eq!(quoted("Disable 1 device: Lamp"), "“Disable 1 device: Lamp”");
    }
}
