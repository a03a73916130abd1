//! Confirmations: the user approves the exact effective input of a call
//! before it runs.
//!
//! A pending record binds to the canonical digest of `{surfaceId,
//! registrationId, capabilityId, consumerKey, effectiveInput, effect}` and
//! keeps the canonical text itself: a retry must reproduce both, or it fails
//! `CONFIRMATION_INVALID {reason: "mismatch"}`. Evidence is single use, expires
//! after `confirmation_ttl`, and cannot cross consumers, registrations,
//! capabilities or registries. At most `max_pending_confirmations` are
//! pending; beyond that a request fails `RATE_LIMITED` and creates nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::Effect;
use crate::audit::{AuditEvent, AuditKind};
use crate::canonical::{Canonical, Sha256Digest};
use crate::clock::rfc3339;
use crate::context::ConfirmationEvidence;
use crate::error::{ErrorCode, ErrorPayload, Retry};
use crate::events::SurfaceEvent;
use crate::registry::Registry;
use crate::util::listeners::Listeners;
use crate::util::lru::Lru;

/// A request waiting for the user, as host UIs render it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingConfirmation {
    /// `cnf_…`.
    pub confirmation_id: Arc<str>,
    /// The capability to run.
    pub capability_id: Arc<str>,
    /// The registration that would run it.
    pub registration_id: Arc<str>,
    /// Who asked (`kind:id`).
    pub consumer_key: Arc<str>,
    /// The effect of the operation being approved.
    pub effect: Effect,
    /// Who demands the approval: `"client"` (the capability's posture or a
    /// policy) or `"server"` (the backend of a domain procedure).
    pub origin: &'static str,
    /// Human-readable: the description plus the effective input.
    pub summary: String,
    /// The exact effective input (bound + agent-supplied) being approved.
    pub input: Value,
    /// When it was requested (RFC 3339).
    pub requested_at: String,
    /// When it expires (RFC 3339).
    pub expires_at: String,
}

/// How a confirmation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmationOutcome {
    /// The user approved.
    Approved,
    /// The user denied.
    Denied,
    /// Nobody answered in time.
    Expired,
}

impl ConfirmationOutcome {
    fn as_str(self) -> &'static str {
        match self {
            ConfirmationOutcome::Approved => "approved",
            ConfirmationOutcome::Denied => "denied",
            ConfirmationOutcome::Expired => "expired",
        }
    }
}

/// Why [`Confirmations::resolve`] did nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResolveError {
    /// No such confirmation.
    Unknown,
    /// It was already approved, denied, expired or consumed.
    NotPending,
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ResolveError::Unknown => "no such confirmation",
            ResolveError::NotPending => "the confirmation is no longer pending",
        })
    }
}

impl std::error::Error for ResolveError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Pending,
    Approved { at_ms: u64 },
    Denied,
    Expired,
    Consumed,
}

struct Record {
    view: PendingConfirmation,
    binding: Canonical,
    digest: Sha256Digest,
    stage: Stage,
    expires_at_ms: u64,
    resolved: watch::Sender<Option<ConfirmationOutcome>>,
}

struct Ended {
    binding: Canonical,
    digest: Sha256Digest,
    stage: Stage,
}

#[derive(Default)]
struct Store {
    /// Pending and approved-but-unused records (at most `max_pending`).
    open: HashMap<Arc<str>, Record>,
    /// Denied, expired and consumed records, remembered to explain a retry.
    ended: Option<Lru<Arc<str>, Ended>>,
}

/// The confirmation store of one registry.
pub(crate) struct ConfirmationStore {
    store: Mutex<Store>,
    listeners: Listeners<[PendingConfirmation]>,
    max_pending: usize,
}

/// What a request binds to.
pub(crate) struct Binding<'a> {
    pub(crate) surface_id: &'a str,
    pub(crate) registration_id: &'a Arc<str>,
    pub(crate) capability_id: &'a Arc<str>,
    pub(crate) consumer_key: &'a Arc<str>,
    pub(crate) effective_input: &'a Value,
    pub(crate) effect: Effect,
}

impl Binding<'_> {
    fn canonical(&self) -> (Canonical, Sha256Digest) {
        let value = serde_json::json!({
            "surfaceId": self.surface_id,
            "registrationId": &**self.registration_id,
            "capabilityId": &**self.capability_id,
            "consumerKey": &**self.consumer_key,
            "effectiveInput": self.effective_input,
            "effect": self.effect.as_str(),
        });
        let canonical = Canonical::of(&value);
        let digest = canonical.sha256();
        (canonical, digest)
    }
}

fn required_payload(view: &PendingConfirmation) -> ErrorPayload {
    ErrorPayload::new(
        ErrorCode::ConfirmationRequired,
        "The user must approve this call. Retry with the confirmationId once they have.",
    )
    .with_detail("confirmationId", &*view.confirmation_id)
    .with_detail("summary", view.summary.as_str())
    .with_detail("expiresAt", view.expires_at.as_str())
    .with_detail("effect", view.effect.as_str())
    .with_detail("origin", view.origin)
}

fn invalid(reason: &'static str) -> ErrorPayload {
    let (message, retry) = match reason {
        "expired" => (
            "The confirmation expired. Call again without a confirmationId to ask the user again.",
            Retry::WithConfirmation,
        ),
        "denied" => ("The user denied this call. Do not retry it.", Retry::No),
        "consumed" => (
            "This confirmation was already used. Do not retry with it.",
            Retry::No,
        ),
        _ => (
            "The confirmation does not match this call. Do not retry with it.",
            Retry::No,
        ),
    };
    ErrorPayload::new(ErrorCode::ConfirmationInvalid, message)
        .with_retry(retry)
        .with_detail("reason", reason)
}

impl ConfirmationStore {
    pub(crate) fn new(max_pending: usize) -> ConfirmationStore {
        ConfirmationStore {
            store: Mutex::new(Store::default()),
            listeners: Listeners::default(),
            max_pending,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn end(store: &mut Store, registry: &Registry, id: &Arc<str>, record: Record, stage: Stage) {
        let limits = registry.limits();
        let ended = store.ended.get_or_insert_with(|| {
            Lru::new(
                limits.max_pending_confirmations.saturating_mul(8).max(64),
                u64::try_from(limits.dedupe_cache_ttl.as_millis()).unwrap_or(u64::MAX),
            )
        });
        ended.insert(
            Arc::clone(id),
            Ended {
                binding: record.binding,
                digest: record.digest,
                stage,
            },
            registry.now_ms(),
        );
    }

    fn audit(registry: &Registry, kind: AuditKind, view: &PendingConfirmation) {
        let mut event = AuditEvent::new(kind, registry.now_ms());
        event.capability_id = Some(Arc::clone(&view.capability_id));
        event.registration_id = Some(Arc::clone(&view.registration_id));
        event.consumer_id = Some(Arc::clone(&view.consumer_key));
        event.detail = Some(Map::from_iter([(
            "confirmationId".to_owned(),
            Value::from(&*view.confirmation_id),
        )]));
        registry.inner.record(&event);
    }

    /// Expires records whose time is up (also done by timers; this keeps a
    /// manual clock honest).
    fn expire_due(&self, registry: &Registry) {
        let now = registry.now_ms();
        let due: Vec<Arc<str>> = self
            .lock()
            .open
            .iter()
            .filter(|(_, record)| now >= record.expires_at_ms)
            .map(|(id, _)| Arc::clone(id))
            .collect();
        for id in due {
            self.expire(registry, &id);
        }
    }

    /// Phase 6 without evidence: returns `CONFIRMATION_REQUIRED` for a new
    /// (or identical pending) request, or `RATE_LIMITED` when full.
    pub(crate) fn request(
        &self,
        registry: &Registry,
        binding: &Binding<'_>,
        summary: String,
        origin: &'static str,
    ) -> ErrorPayload {
        self.expire_due(registry);
        let (canonical, digest) = binding.canonical();
        let mut store = self.lock();
        if let Some(record) = store
            .open
            .values()
            .find(|r| r.stage == Stage::Pending && r.digest == digest && r.binding == canonical)
        {
            return required_payload(&record.view);
        }
        if store.open.len() >= self.max_pending {
            return ErrorPayload::rate_limited("queue-full", Some(1000));
        }
        let now = registry.now_ms();
        let ttl = registry.limits().confirmation_ttl;
        let expires_at_ms = now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let id: Arc<str> = Arc::from(registry.inner.ids.confirmation_id());
        let view = PendingConfirmation {
            confirmation_id: Arc::clone(&id),
            capability_id: Arc::clone(binding.capability_id),
            registration_id: Arc::clone(binding.registration_id),
            consumer_key: Arc::clone(binding.consumer_key),
            effect: binding.effect,
            origin,
            summary,
            input: binding.effective_input.clone(),
            requested_at: rfc3339(now),
            expires_at: rfc3339(expires_at_ms),
        };
        let payload = required_payload(&view);
        let (resolved, _) = watch::channel(None);
        store.open.insert(
            Arc::clone(&id),
            Record {
                view: view.clone(),
                binding: canonical,
                digest,
                stage: Stage::Pending,
                expires_at_ms,
                resolved,
            },
        );
        drop(store);
        Self::audit(registry, AuditKind::ConfirmationRequested, &view);
        registry
            .inner
            .dispatcher
            .emit([SurfaceEvent::ConfirmationRequested {
                confirmation_id: Arc::clone(&id),
                capability_id: Arc::clone(&view.capability_id),
                expires_at: view.expires_at.clone(),
            }]);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let weak = Arc::downgrade(&registry.inner);
            runtime.spawn(async move {
                tokio::time::sleep(ttl).await;
                if let Some(inner) = weak.upgrade() {
                    let registry = Registry { inner };
                    registry.inner.confirmations.expire(&registry, &id);
                }
            });
        }
        self.notify(registry);
        payload
    }

    /// Phase 6 with evidence: consumes approved, matching evidence exactly once.
    pub(crate) fn redeem(
        &self,
        registry: &Registry,
        confirmation_id: &str,
        binding: &Binding<'_>,
    ) -> Result<ConfirmationEvidence, ErrorPayload> {
        self.expire_due(registry);
        let (canonical, digest) = binding.canonical();
        let mut store = self.lock();
        if let Some(record) = store.open.get(confirmation_id) {
            // Digest and exact canonical value must both match.
            if record.digest != digest || record.binding != canonical {
                return Err(invalid("mismatch"));
            }
            match record.stage {
                Stage::Pending => return Err(required_payload(&record.view)),
                Stage::Approved { at_ms } => {
                    let Some((id, record)) = store.open.remove_entry(confirmation_id) else {
                        return Err(invalid("mismatch"));
                    };
                    let view = record.view.clone();
                    Self::end(&mut store, registry, &id, record, Stage::Consumed);
                    drop(store);
                    Self::audit(registry, AuditKind::ConfirmationConsumed, &view);
                    return Ok(ConfirmationEvidence {
                        id: id.to_string(),
                        approved_at: rfc3339(at_ms),
                    });
                }
                Stage::Denied | Stage::Expired | Stage::Consumed => {}
            }
        }
        let Some(ended) = store
            .ended
            .as_mut()
            .and_then(|ended| ended.peek(confirmation_id, registry.now_ms()))
        else {
            return Err(invalid("mismatch"));
        };
        if ended.digest != digest || ended.binding != canonical {
            return Err(invalid("mismatch"));
        }
        Err(match ended.stage {
            Stage::Denied => invalid("denied"),
            Stage::Expired => invalid("expired"),
            _ => invalid("consumed"),
        })
    }

    /// The host's answer.
    pub(crate) fn resolve(
        &self,
        registry: &Registry,
        confirmation_id: &str,
        approved: bool,
    ) -> Result<(), ResolveError> {
        self.expire_due(registry);
        let mut store = self.lock();
        let Some(record) = store.open.get_mut(confirmation_id) else {
            let known = store
                .ended
                .as_ref()
                .is_some_and(|ended| ended.peek(confirmation_id, registry.now_ms()).is_some());
            return Err(if known {
                ResolveError::NotPending
            } else {
                ResolveError::Unknown
            });
        };
        if record.stage != Stage::Pending {
            return Err(ResolveError::NotPending);
        }
        let outcome = if approved {
            ConfirmationOutcome::Approved
        } else {
            ConfirmationOutcome::Denied
        };
        let view = record.view.clone();
        if approved {
            record.stage = Stage::Approved {
                at_ms: registry.now_ms(),
            };
            record.resolved.send_replace(Some(outcome));
        } else if let Some((id, record)) = store.open.remove_entry(confirmation_id) {
            record.resolved.send_replace(Some(outcome));
            Self::end(&mut store, registry, &id, record, Stage::Denied);
        }
        drop(store);
        let kind = if approved {
            AuditKind::ConfirmationApproved
        } else {
            AuditKind::ConfirmationDenied
        };
        Self::audit(registry, kind, &view);
        registry
            .inner
            .dispatcher
            .emit([SurfaceEvent::ConfirmationResolved {
                confirmation_id: Arc::clone(&view.confirmation_id),
                outcome: outcome.as_str(),
            }]);
        self.notify(registry);
        Ok(())
    }

    /// Expires one record if its time is up or the registry is going away.
    pub(crate) fn expire(&self, registry: &Registry, confirmation_id: &Arc<str>) {
        let mut store = self.lock();
        let due = store.open.get(confirmation_id).is_some_and(|record| {
            registry.is_disposed() || registry.now_ms() >= record.expires_at_ms
        });
        if !due {
            return;
        }
        let Some((id, record)) = store.open.remove_entry(confirmation_id) else {
            return;
        };
        let was_pending = record.stage == Stage::Pending;
        let view = record.view.clone();
        record
            .resolved
            .send_replace(Some(ConfirmationOutcome::Expired));
        Self::end(&mut store, registry, &id, record, Stage::Expired);
        drop(store);
        Self::audit(registry, AuditKind::ConfirmationExpired, &view);
        if was_pending {
            registry
                .inner
                .dispatcher
                .emit([SurfaceEvent::ConfirmationResolved {
                    confirmation_id: Arc::clone(&view.confirmation_id),
                    outcome: ConfirmationOutcome::Expired.as_str(),
                }]);
        }
        self.notify(registry);
    }

    /// Expires everything (dispose).
    pub(crate) fn expire_all(&self, registry: &Registry) {
        let ids: Vec<Arc<str>> = self.lock().open.keys().cloned().collect();
        for id in ids {
            self.expire(registry, &id);
        }
    }

    pub(crate) fn pending(&self) -> Vec<PendingConfirmation> {
        let store = self.lock();
        let mut pending: Vec<PendingConfirmation> = store
            .open
            .values()
            .filter(|record| record.stage == Stage::Pending)
            .map(|record| record.view.clone())
            .collect();
        pending.sort_by(|a, b| {
            a.requested_at
                .cmp(&b.requested_at)
                .then_with(|| a.confirmation_id.cmp(&b.confirmation_id))
        });
        pending
    }

    pub(crate) fn watcher(
        &self,
        confirmation_id: &str,
    ) -> Option<watch::Receiver<Option<ConfirmationOutcome>>> {
        self.lock()
            .open
            .get(confirmation_id)
            .map(|record| record.resolved.subscribe())
    }

    fn ended_outcome(
        &self,
        registry: &Registry,
        confirmation_id: &str,
    ) -> Option<ConfirmationOutcome> {
        let store = self.lock();
        let ended = store
            .ended
            .as_ref()?
            .peek(confirmation_id, registry.now_ms())?;
        Some(match ended.stage {
            Stage::Denied => ConfirmationOutcome::Denied,
            Stage::Expired => ConfirmationOutcome::Expired,
            _ => ConfirmationOutcome::Approved,
        })
    }

    fn notify(&self, registry: &Registry) {
        if self.listeners.is_empty() {
            return;
        }
        let pending = registry.inner.confirmations.pending();
        self.listeners.call(&pending, "confirmation");
    }
}

/// The confirmation controller of a registry: what host UIs use to show and
/// answer pending requests.
#[derive(Clone, Debug)]
pub struct Confirmations {
    registry: Registry,
}

/// Stops a confirmation listener when dropped.
#[must_use = "dropping it unsubscribes the listener"]
pub struct PendingSubscription {
    registry: Registry,
    id: u64,
}

impl std::fmt::Debug for PendingSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingSubscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for PendingSubscription {
    fn drop(&mut self) {
        self.registry.inner.confirmations.listeners.remove(self.id);
    }
}

impl Confirmations {
    /// Requests waiting for the user, oldest first.
    pub fn pending(&self) -> Vec<PendingConfirmation> {
        self.registry.inner.confirmations.pending()
    }

    /// Approves or denies a pending request.
    pub fn resolve(&self, confirmation_id: &str, approved: bool) -> Result<(), ResolveError> {
        self.registry
            .inner
            .confirmations
            .resolve(&self.registry, confirmation_id, approved)
    }

    /// Approves a pending request.
    pub fn approve(&self, confirmation_id: &str) -> Result<(), ResolveError> {
        self.resolve(confirmation_id, true)
    }

    /// Denies a pending request.
    pub fn deny(&self, confirmation_id: &str) -> Result<(), ResolveError> {
        self.resolve(confirmation_id, false)
    }

    /// Waits until the confirmation is approved, denied or expired (`None`
    /// for an unknown id). Cancel by dropping the future.
    pub async fn wait_for(&self, confirmation_id: &str) -> Option<ConfirmationOutcome> {
        let store = &self.registry.inner.confirmations;
        let Some(mut watcher) = store.watcher(confirmation_id) else {
            return store.ended_outcome(&self.registry, confirmation_id);
        };
        match watcher.wait_for(Option::is_some).await {
            Ok(outcome) => *outcome,
            Err(_) => Some(ConfirmationOutcome::Expired),
        }
    }

    /// Calls `listener` with the pending list whenever it changes.
    pub fn subscribe(
        &self,
        listener: impl Fn(&[PendingConfirmation]) + Send + Sync + 'static,
    ) -> PendingSubscription {
        let id = self.registry.inner.confirmations.listeners.add(listener);
        PendingSubscription {
            registry: self.registry.clone(),
            id,
        }
    }

    /// Expires every request whose time is up now (timers do this on their
    /// own; useful with a manual clock).
    pub fn expire_due(&self) {
        self.registry.inner.confirmations.expire_due(&self.registry);
    }

    /// The time to live of new requests.
    pub fn ttl(&self) -> Duration {
        self.registry.limits().confirmation_ttl
    }
}

impl Registry {
    /// The confirmation controller.
    pub fn confirmations(&self) -> Confirmations {
        Confirmations {
            registry: self.clone(),
        }
    }
}
