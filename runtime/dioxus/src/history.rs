//! The person's activity before this process started: the durable audit
//! log's records (`agent_surface::audit::AuditLog`) read back as the
//! activity entries the live log makes, through the same mapping, so a
//! restarted console shows yesterday's calls and approvals in the same
//! words as today's.

use std::collections::VecDeque;
use std::sync::Arc;

use agent_surface::audit::{AuditKind, AuditRecord, RecordedEvent};
use agent_surface::error::ErrorCode;
use agent_surface::events::SurfaceEvent;
use serde_json::Value;

use crate::activity::{ActivityEntry, MAX_ACTIVITY, Memory};

/// The reasons a withdrawal record can carry.
const REASONS: &[&str] = &[
    "replaced",
    "unmounted",
    "agent-left",
    "input-changed",
    "cancelled",
    "displaced",
];
/// The proofs of presence an approval record can carry.
const PROOFS: &[&str] = &["webauthn", "out-of-band"];

/// `text` as one of `known` (a record read back names only these).
fn known(text: Option<&str>, known: &[&'static str]) -> Option<&'static str> {
    let text = text?;
    known.iter().copied().find(|k| *k == text)
}

fn detail_text<'a>(event: &'a RecordedEvent, key: &str) -> Option<&'a str> {
    event.detail.as_ref()?.get(key).and_then(Value::as_str)
}

/// The live event a record stands for, if a person reads it.
fn surface_event(event: &RecordedEvent) -> Option<SurfaceEvent> {
    let capability_id: Arc<str> = Arc::from(event.capability_id.as_deref().unwrap_or(""));
    let consumer_id: Arc<str> = Arc::from(event.consumer_id.as_deref().unwrap_or(""));
    let confirmation_id = || Arc::from(detail_text(event, "confirmationId").unwrap_or(""));
    let resolved = |outcome: &'static str| SurfaceEvent::ConfirmationResolved {
        confirmation_id: confirmation_id(),
        outcome,
        channel: detail_text(event, "channel").map(Arc::from),
        approver: detail_text(event, "approver").map(Arc::from),
        reason: known(detail_text(event, "reason"), REASONS),
        proof: known(detail_text(event, "personVerified"), PROOFS),
    };
    match event.kind {
        // "Waiting for your answer" is true only while it waits: the
        // request's own record says it was asked.
        AuditKind::InvocationSettled if event.code == Some(ErrorCode::ConfirmationRequired) => None,
        AuditKind::InvocationSettled => Some(SurfaceEvent::InvocationSettled {
            invocation_id: Arc::from(event.invocation_id.as_deref().unwrap_or("")),
            capability_id,
            consumer_id,
            consumer_label: None,
            status: if event.code.is_some() { "error" } else { "ok" },
            code: event.code,
            reason: detail_text(event, "reason").map(Arc::from),
            duration_ms: event.duration_ms.unwrap_or(0),
        }),
        AuditKind::ConfirmationRequested => Some(SurfaceEvent::ConfirmationRequested {
            confirmation_id: confirmation_id(),
            capability_id,
            expires_at: String::new(),
            consumer_id,
            requester: None,
            title: detail_text(event, "title")
                .unwrap_or("a request")
                .to_owned(),
        }),
        AuditKind::ConfirmationApproved => Some(resolved("approved")),
        AuditKind::ConfirmationDenied => Some(resolved("denied")),
        AuditKind::ConfirmationExpired => Some(resolved("expired")),
        AuditKind::ConfirmationWithdrawn => Some(resolved("withdrawn")),
        _ => None,
    }
}

/// The activity entries of `records` (oldest first, as
/// [`AuditLog::read`](agent_surface::audit::AuditLog::read) returns them),
/// newest first, at most `capacity` of them (at most [`MAX_ACTIVITY`]).
pub fn activity_from_audit(records: &[AuditRecord], capacity: usize) -> Vec<ActivityEntry> {
    let capacity = capacity.clamp(1, MAX_ACTIVITY);
    let mut memory = Memory::default();
    let mut entries = VecDeque::with_capacity(capacity);
    // Requests asked and never answered in the record: the process that
    // held them ended, and them with it.
    let mut open: Vec<Arc<str>> = Vec::new();
    let mut last_ms = 0;
    let push = |entries: &mut VecDeque<ActivityEntry>, entry| {
        if entries.len() == capacity {
            entries.pop_back();
        }
        entries.push_front(entry);
    };
    for record in records {
        let AuditRecord::Event(event) = record else {
            continue;
        };
        last_ms = event.at_ms;
        let Some(surface) = surface_event(event) else {
            continue;
        };
        match &surface {
            SurfaceEvent::ConfirmationRequested {
                confirmation_id, ..
            } => {
                if open.len() == capacity {
                    open.remove(0);
                }
                open.push(Arc::clone(confirmation_id));
            }
            SurfaceEvent::ConfirmationResolved {
                confirmation_id, ..
            } => open.retain(|id| id != confirmation_id),
            _ => {}
        }
        if let Some(entry) = memory.entry(&surface, event.at_ms, capacity) {
            push(&mut entries, entry);
        }
    }
    for confirmation_id in open {
        let ended = SurfaceEvent::ConfirmationResolved {
            confirmation_id,
            outcome: "withdrawn",
            channel: None,
            approver: None,
            reason: Some("unmounted"),
            proof: None,
        };
        if let Some(entry) = memory.entry(&ended, last_ms, capacity) {
            push(&mut entries, entry);
        }
    }
    entries.into()
}
