//! The audit trail: what happened, to which capability, for whom, how long it
//! waited and how long it ran. Read it from the registry's default
//! [`MemoryAuditSink`], keep it across restarts in an [`AuditLog`] on disk
//! (not in a browser page), or send it elsewhere with your own
//! [`AuditSink`].
//!
//! A sink never fails the pipeline and never blocks it: the registry calls
//! [`AuditSink::record`] synchronously, contains panics, and sinks are
//! expected to hand events off quickly (the in-memory sink appends to a
//! bounded buffer; the console sink writes one line to stderr).

use std::collections::VecDeque;
use std::fmt;
use std::io::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::clock::rfc3339;
use crate::error::ErrorCode;

#[cfg(not(target_family = "wasm"))]
mod durable;
#[cfg(not(target_family = "wasm"))]
mod read;
#[cfg(not(target_family = "wasm"))]
mod shared;

#[cfg(not(target_family = "wasm"))]
pub use durable::{
    AuditLog, AuditLogBuilder, AuditLogFailure, DEFAULT_MAX_BYTES, DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_SEGMENT_BYTES, Durability, LOCK_FILE,
};
#[cfg(not(target_family = "wasm"))]
pub use read::{
    AuditQuery, AuditRead, AuditRecord, DEFAULT_QUERY_BYTES, DEFAULT_QUERY_LIMIT, RecordedEvent,
    read_dir,
};
#[cfg(not(target_family = "wasm"))]
pub use shared::{MAX_SHARED_EVENT_BYTES, NoRuntime, SHARED_AUDIT_QUEUE, SharedAuditSink};

/// Kinds of audit events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditKind {
    /// A component was mounted.
    Registration,
    /// A component was unmounted.
    Unregistration,
    /// A mount was refused.
    RegistrationRejected,
    /// An invocation started.
    InvocationStarted,
    /// An invocation settled.
    InvocationSettled,
    /// A confirmation was requested.
    ConfirmationRequested,
    /// The user approved.
    ConfirmationApproved,
    /// The user denied.
    ConfirmationDenied,
    /// A confirmation expired.
    ConfirmationExpired,
    /// A confirmation was withdrawn before anyone answered it.
    ConfirmationWithdrawn,
    /// Approved evidence was used.
    ConfirmationConsumed,
    /// A handler finished after its invocation had already settled.
    LateSettlement,
    /// A view capability shares its suffix with a known domain procedure.
    CollisionSuspected,
}

/// One audit record. `payload` is present only at audit level `full`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AuditEvent {
    /// When, in epoch milliseconds (serialized as RFC 3339).
    pub at_ms: u64,
    /// What.
    pub kind: AuditKind,
    /// The capability.
    pub capability_id: Option<Arc<str>>,
    /// The registration.
    pub registration_id: Option<Arc<str>>,
    /// The invocation.
    pub invocation_id: Option<Arc<str>>,
    /// The consumer (`kind:id`).
    pub consumer_id: Option<Arc<str>>,
    /// `ok` or `error`, for settlements.
    pub status: Option<&'static str>,
    /// The error code, for failed settlements.
    pub code: Option<ErrorCode>,
    /// Total duration, for settlements.
    pub duration_ms: Option<u64>,
    /// Time spent waiting for a concurrency slot.
    pub queue_wait_ms: Option<u64>,
    /// Time spent inside the handler.
    pub execution_ms: Option<u64>,
    /// Input and output (level `full`, redacted and size-capped).
    pub payload: Option<Map<String, Value>>,
    /// Operator-channel details (handler error text, policy annotations);
    /// never shown to agents.
    pub detail: Option<Map<String, Value>>,
}

impl AuditEvent {
    /// An event of `kind` at `at_ms` with every other field empty.
    pub fn new(kind: AuditKind, at_ms: u64) -> AuditEvent {
        AuditEvent {
            at_ms,
            kind,
            capability_id: None,
            registration_id: None,
            invocation_id: None,
            consumer_id: None,
            status: None,
            code: None,
            duration_ms: None,
            queue_wait_ms: None,
            execution_ms: None,
            payload: None,
            detail: None,
        }
    }
}

impl Serialize for AuditEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("at", &rfc3339(self.at_ms))?;
        map.serialize_entry("type", &self.kind)?;
        macro_rules! optional {
            ($($key:literal => $field:expr),* $(,)?) => {
                $(if let Some(value) = &$field {
                    map.serialize_entry($key, value)?;
                })*
            };
        }
        optional!(
            "capabilityId" => self.capability_id,
            "registrationId" => self.registration_id,
            "invocationId" => self.invocation_id,
            "consumerId" => self.consumer_id,
            "status" => self.status,
            "code" => self.code,
            "durationMs" => self.duration_ms,
            "queueWaitMs" => self.queue_wait_ms,
            "executionMs" => self.execution_ms,
            "payload" => self.payload,
            "detail" => self.detail,
        );
        map.end()
    }
}

/// Receives audit events. Implementations must return quickly.
pub trait AuditSink: Send + Sync + 'static {
    /// Records one event.
    fn record(&self, event: &AuditEvent);
}

impl fmt::Debug for dyn AuditSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuditSink")
    }
}

/// Records into a sink, containing panics.
pub(crate) fn record(sink: &dyn AuditSink, event: &AuditEvent) {
    if crate::util::contain::catch(|| sink.record(event)).is_err() {
        tracing::error!(kind = ?event.kind, "an audit sink panicked; the event was dropped");
    }
}

/// A bounded in-memory sink (the default): keeps the newest `capacity` events.
#[derive(Debug)]
pub struct MemoryAuditSink {
    events: Mutex<VecDeque<AuditEvent>>,
    capacity: usize,
}

impl MemoryAuditSink {
    /// A sink keeping at most `capacity` events (oldest dropped first).
    pub fn new(capacity: usize) -> MemoryAuditSink {
        MemoryAuditSink {
            events: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
        }
    }

    /// A copy of the recorded events, oldest first.
    pub fn events(&self) -> Vec<AuditEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// Removes every recorded event.
    pub fn clear(&self) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

impl Default for MemoryAuditSink {
    fn default() -> Self {
        MemoryAuditSink::new(1000)
    }
}

impl MemoryAuditSink {
    /// Keeps `event` itself (no copy); returns the event it pushed out, for
    /// the caller to drop after the lock is released.
    pub(crate) fn push(&self, event: AuditEvent) -> Option<AuditEvent> {
        let mut events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        let evicted = if events.len() >= self.capacity {
            events.pop_front()
        } else {
            None
        };
        events.push_back(event);
        evicted
    }
}

impl AuditSink for MemoryAuditSink {
    fn record(&self, event: &AuditEvent) {
        drop(self.push(event.clone()));
    }
}

/// Writes one JSON line per event to the diagnostic stream (stderr), never
/// stdout. Added in development.
#[derive(Debug, Default)]
pub struct ConsoleAuditSink;

impl AuditSink for ConsoleAuditSink {
    fn record(&self, event: &AuditEvent) {
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(std::io::stderr().lock(), "agent-surface audit {line}");
        }
    }
}

/// Sends each event to several sinks.
#[derive(Debug, Default)]
pub struct FanOut(pub Vec<Arc<dyn AuditSink>>);

impl AuditSink for FanOut {
    fn record(&self, event: &AuditEvent) {
        for sink in &self.0 {
            record(sink.as_ref(), event);
        }
    }
}
