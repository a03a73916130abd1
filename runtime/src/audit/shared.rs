//! The audit of replicas: a sink that appends every event to a shared
//! store's ordered log, so the replicas of one surface keep one record, in
//! the order the store received them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use super::{AuditEvent, AuditSink, RecordedEvent};
use crate::store::{Namespace, SharedStore, StoreError};

/// Events a [`SharedAuditSink`] holds while the store is slow or away;
/// beyond it, events are counted as lost (and the loss is recorded).
pub const SHARED_AUDIT_QUEUE: usize = 4_096;

/// The largest event the sink sends, serialized; a larger one is recorded
/// without its payload.
pub const MAX_SHARED_EVENT_BYTES: usize = 64 * 1024;

/// A sink that appends each event, serialized as JSON, to the ordered log
/// of its surface in a [shared store](crate::store), which keeps the newest
/// `keep` events. The registry hands events over without waiting (a
/// bounded queue); one writer task appends them in order, retrying while
/// the store is away. Events the queue could not take are counted and
/// recorded as a `gap` record once the store answers again.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use agent_surface::Registry;
/// use agent_surface::audit::SharedAuditSink;
/// use agent_surface::store::{MemoryStore, Namespace, SharedStore};
///
/// let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
/// let namespace = Namespace::new("devices")?;
/// let audit = SharedAuditSink::spawn(store.clone(), &namespace, 100_000)?;
/// let registry = Registry::builder()
///     .shared_store(store.clone(), namespace.clone())
///     .audit_sink(Arc::new(audit))
///     .build();
/// let newest = SharedAuditSink::read(&*store, &namespace, 50).await?;
/// # drop((registry, newest)); Ok(()) }
/// ```
#[derive(Debug)]
pub struct SharedAuditSink {
    queue: mpsc::Sender<String>,
    lost: Arc<AtomicU64>,
}

/// [`SharedAuditSink::spawn`] was called outside a tokio runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoRuntime;

impl std::fmt::Display for NoRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the shared audit sink's writer needs a tokio runtime")
    }
}

impl std::error::Error for NoRuntime {}

impl SharedAuditSink {
    /// A sink appending to `namespace`'s log in `store`, which keeps its
    /// newest `keep` events; its writer task runs on the current tokio
    /// runtime until the sink is dropped.
    pub fn spawn(
        store: Arc<dyn SharedStore>,
        namespace: &Namespace,
        keep: usize,
    ) -> Result<SharedAuditSink, NoRuntime> {
        let (queue, events) = mpsc::channel(SHARED_AUDIT_QUEUE);
        let lost = Arc::new(AtomicU64::new(0));
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| NoRuntime)?;
        drop(runtime.spawn(write(
            store,
            namespace.audit(),
            keep.max(1),
            events,
            Arc::clone(&lost),
        )));
        Ok(SharedAuditSink { queue, lost })
    }

    /// The newest `count` events of `namespace`'s log, oldest first
    /// (records this version cannot read, and `gap` records, are left
    /// out); an event's `seq` is its position in what was read.
    pub async fn read(
        store: &dyn SharedStore,
        namespace: &Namespace,
        count: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let records = store.records(&namespace.audit(), count).await?;
        Ok(records
            .iter()
            .filter_map(|record| {
                let mut value: serde_json::Value = serde_json::from_str(record).ok()?;
                let at_ms = value.get("atMs").and_then(serde_json::Value::as_u64)?;
                if let Some(map) = value.as_object_mut() {
                    map.remove("atMs");
                }
                let mut event: RecordedEvent = serde_json::from_value(value).ok()?;
                event.at_ms = at_ms;
                Some(event)
            })
            .enumerate()
            .map(|(seq, mut event)| {
                event.seq = seq as u64;
                event
            })
            .collect())
    }

    /// Events lost so far (the queue was full while the store was away).
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}

impl AuditSink for SharedAuditSink {
    fn record(&self, event: &AuditEvent) {
        // The event's fields and its time in milliseconds (`atMs`).
        let serialize = |event: &AuditEvent| {
            let mut value = serde_json::to_value(event).ok()?;
            value
                .as_object_mut()?
                .insert("atMs".to_owned(), event.at_ms.into());
            serde_json::to_string(&value).ok()
        };
        let mut text = serialize(event).unwrap_or_default();
        if text.len() > MAX_SHARED_EVENT_BYTES {
            let mut lighter = event.clone();
            lighter.payload = None;
            lighter.detail = None;
            text = serialize(&lighter).unwrap_or_default();
        }
        if text.is_empty() || self.queue.try_send(text).is_err() {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The writer: appends in order; while the store is away, holds the event
/// and tries again (the queue behind it fills, then counts losses).
async fn write(
    store: Arc<dyn SharedStore>,
    key: String,
    keep: usize,
    mut events: mpsc::Receiver<String>,
    lost: Arc<AtomicU64>,
) {
    let mut recorded_lost = 0;
    while let Some(event) = events.recv().await {
        let mut backoff = Duration::from_millis(50);
        let mut refusals = 0;
        loop {
            let now_lost = lost.load(Ordering::Relaxed);
            let appended = if now_lost > recorded_lost {
                let gap = serde_json::json!({ "type": "gap", "lost": now_lost - recorded_lost })
                    .to_string();
                match store.append(&key, &gap, keep).await {
                    Ok(()) => {
                        recorded_lost = now_lost;
                        store.append(&key, &event, keep).await
                    }
                    Err(error) => Err(error),
                }
            } else {
                store.append(&key, &event, keep).await
            };
            match appended {
                Ok(()) => break,
                // A store that refuses it (full, or the key holds something
                // else) will keep refusing: the event is counted as lost
                // after a few tries, so the events behind it go on.
                Err(error @ (StoreError::Full | StoreError::Protocol(_))) if refusals >= 3 => {
                    tracing::error!(store = store.name(), %error, "the shared audit log refused an event; it is lost");
                    lost.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(error) => {
                    refusals += 1;
                    tracing::warn!(store = store.name(), %error, "the shared audit log did not take an event; retrying");
                    crate::util::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
    }
}
