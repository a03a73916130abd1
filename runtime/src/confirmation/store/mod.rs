//! The confirmation store of one registry: pending, approved, reserved and
//! ended records.
//!
//! A record moves `Pending → Approved → Reserved → Consumed`: phase 6
//! reserves approved evidence for one invocation ([`Reservation`]), the
//! execution consumes it, and any failure before the execution releases it
//! back to `Approved`, so the same evidence works on a retry until its TTL.
//! A reserved record is not redeemed by a second call meanwhile and does
//! not expire under the call that holds it.

mod answer;
mod expire;
mod lookup;
mod quota;
mod withdraw;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};
use tokio::sync::watch;

use super::services::ConfirmationServices;
use super::summary::MAX_SUMMARY_CHARS;
use super::{ConfirmationOutcome, PendingConfirmation, Resolution};
use crate::audit::{AuditEvent, AuditKind};
use crate::canonical::{Canonical, Sha256Digest};
use crate::clock::rfc3339;
use crate::context::ConfirmationEvidence;
use crate::error::{ConfirmationInvalidReason, ErrorCode, ErrorPayload};
use crate::events::SurfaceEvent;
use crate::util::display_text;
use crate::util::listeners::Listeners;
use crate::util::lru::Lru;
use agent_surface_rules::Effect;

/// Why a request was withdrawn when its asker's input changed.
pub(crate) const INPUT_CHANGED: &str = "input-changed";

/// Retry hint of a refused request: the pending list frees up as humans answer.
const FULL_RETRY_MS: u64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Pending,
    Approved {
        at_ms: u64,
    },
    /// Approved and held by one invocation between phase 6 and execution.
    Reserved {
        at_ms: u64,
    },
    Denied,
    Expired,
    Withdrawn,
    Consumed,
}

struct Record {
    view: PendingConfirmation,
    binding: Canonical,
    digest: Sha256Digest,
    stage: Stage,
    expires_at_ms: u64,
    resolved: watch::Sender<Option<ConfirmationOutcome>>,
    /// Who approved it, once approved.
    resolution: Option<Resolution>,
    /// Withdrawn while a call held it: why, applied when the call lets go.
    withdrawn: Option<&'static str>,
    /// Used on another replica while a call here held it: applied (ended
    /// as consumed) when the call lets go.
    used_elsewhere: bool,
    /// Calls waiting on it for the person ([`super::WaitGuard`]s).
    waiters: usize,
    /// The party whose share it counts against.
    share: Arc<str>,
    /// Its place in that share across replicas (with a shared store),
    /// given back when the record is dropped.
    slot: Option<super::Slot>,
}

struct Ended {
    binding: Canonical,
    digest: Sha256Digest,
    stage: Stage,
    resolution: Resolution,
    /// Who asked, for what: a withdrawn request's retry by the same
    /// consumer is told so even from a newer registration.
    consumer_key: Arc<str>,
    capability_id: Arc<str>,
}

#[derive(Default)]
struct Store {
    /// Pending, approved and reserved records (at most `max_pending`).
    open: HashMap<Arc<str>, Record>,
    /// Denied, expired and consumed records, remembered to explain a retry.
    /// Boxed, as the next one: most registries never need them, and a
    /// registry's shared state stays small to create.
    ended: Option<Box<Lru<Arc<str>, Ended>>>,
    /// Consumers forgotten lately, with the epoch of their forgetting.
    forgotten: Option<Box<Lru<Arc<str>, u64>>>,
    /// The latest epoch `forgotten` let go of: who was forgotten before it
    /// is no longer known.
    forgotten_floor: u64,
}

/// The registry a confirmation store belongs to: its services and the way
/// back to the store, for what holds the registry weakly (a reservation, a
/// request's expiry timer, the host's controller).
pub(crate) trait StoreOwner: ConfirmationServices {
    /// The store these services belong to.
    fn confirmation_store(&self) -> &ConfirmationStore;
}

/// The confirmation store of one registry.
pub(crate) struct ConfirmationStore {
    /// Made by the first request, lookup or listener: most registries
    /// never ask a person anything, and their creation stays small.
    parts: std::sync::OnceLock<Box<Parts>>,
    max_pending: usize,
    /// Forgettings so far (see `forget.rs`).
    forgets: std::sync::atomic::AtomicU64,
}

/// The store's records and listeners, made on first use.
#[derive(Default)]
struct Parts {
    store: Mutex<Store>,
    listeners: Listeners<[PendingConfirmation]>,
}

/// What a new request shows the person besides what it binds to.
pub(crate) struct Ask {
    /// The summary (escaped and cut here).
    pub(crate) summary: String,
    /// `client` or `server`.
    pub(crate) origin: &'static str,
    /// The request in the person's terms (already sanitized).
    pub(crate) presentation: super::Presentation,
    /// Who asks, as a person would name them.
    pub(crate) requester: Option<Arc<str>>,
    /// The forget epoch when the asking call began.
    pub(crate) since_epoch: u64,
    /// The party whose share it counts against (the asker's principal).
    pub(crate) share: Arc<str>,
    /// Where the request stands in that share across replicas.
    pub(crate) place: super::Place,
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

fn invalid(reason: ConfirmationInvalidReason) -> ErrorPayload {
    ErrorPayload::confirmation_invalid(reason)
}

impl ConfirmationStore {
    pub(crate) fn new(max_pending: usize) -> ConfirmationStore {
        ConfirmationStore {
            parts: std::sync::OnceLock::new(),
            max_pending,
            forgets: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn parts(&self) -> &Parts {
        self.parts.get_or_init(Box::default)
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.parts()
            .store
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the records and listeners were made (a store never used
    /// holds nothing).
    pub(super) fn made(&self) -> bool {
        self.parts.get().is_some()
    }

    /// The listeners of the pending list.
    pub(super) fn listeners(&self) -> &Listeners<[PendingConfirmation]> {
        &self.parts().listeners
    }

    fn end<S: ConfirmationServices + ?Sized>(
        store: &mut Store,
        services: &S,
        id: &Arc<str>,
        record: Record,
        stage: Stage,
        resolution: Resolution,
        now_ms: u64,
    ) {
        let limits = services.confirmation_limits();
        let ended = store.ended.get_or_insert_with(|| {
            Box::new(Lru::new(
                limits.max_pending.saturating_mul(8).max(64),
                crate::util::millis::millis(limits.ended_ttl),
            ))
        });
        ended.insert(
            Arc::clone(id),
            Ended {
                consumer_key: record.view.consumer_key,
                capability_id: record.view.capability_id,
                binding: record.binding,
                digest: record.digest,
                stage,
                resolution,
            },
            now_ms,
        );
    }

    /// Audits a step of `view`'s life; a resolution adds who answered,
    /// through which channel, or why it was withdrawn.
    fn audit<S: ConfirmationServices + ?Sized>(
        services: &S,
        kind: AuditKind,
        view: &PendingConfirmation,
        resolution: Option<&Resolution>,
    ) {
        let mut event = AuditEvent::new(kind, services.clock_ms());
        event.capability_id = Some(Arc::clone(&view.capability_id));
        event.registration_id = Some(Arc::clone(&view.registration_id));
        event.consumer_id = Some(Arc::clone(&view.consumer_key));
        // The title the person was shown, so a record read later (after a
        // restart) says what was approved in the person's terms.
        let mut detail = Map::from_iter([
            (
                "confirmationId".to_owned(),
                Value::from(&*view.confirmation_id),
            ),
            (
                "title".to_owned(),
                Value::from(view.presentation.title.as_str()),
            ),
        ]);
        if let Some(resolution) = resolution {
            let fields = [
                ("channel", resolution.channel.as_deref()),
                ("channelKind", resolution.channel_kind.map(|k| k.as_str())),
                ("approver", resolution.approver.as_deref()),
                ("reason", resolution.reason),
                (
                    "personVerified",
                    resolution
                        .person_verified
                        .as_ref()
                        .map(|p| p.method.as_str()),
                ),
                (
                    "credentialId",
                    resolution
                        .person_verified
                        .as_ref()
                        .map(|p| &*p.credential_id),
                ),
            ];
            for (key, value) in fields {
                if let Some(value) = value {
                    detail.insert(key.to_owned(), Value::from(value));
                }
            }
        }
        event.detail = Some(detail);
        services.audit(&event);
    }

    /// A resolution without an answer: an expiry or a withdrawal.
    fn unanswered(
        id: &Arc<str>,
        outcome: ConfirmationOutcome,
        reason: Option<&'static str>,
        now_ms: u64,
    ) -> Resolution {
        Resolution {
            confirmation_id: Arc::clone(id),
            outcome,
            channel: None,
            channel_kind: None,
            approver: None,
            reason,
            person_verified: None,
            at: rfc3339(now_ms),
        }
    }

    /// Phase 6 without evidence: returns `CONFIRMATION_REQUIRED` for a new
    /// (or identical pending) request, or `RATE_LIMITED` when the registry
    /// or this consumer has too many open. The summary is escaped and cut
    /// to 300 characters here, whoever wrote it.
    ///
    /// `live` says whether what the request binds to is still mounted; it
    /// is asked under the store's lock, which an unmount's withdrawal takes
    /// after it marks the registration gone: an unmount racing the request
    /// either withdraws it or is seen here (`COMPONENT_UNMOUNTED`), so no
    /// request outlives its registration.
    pub(crate) fn request<S: StoreOwner>(
        &self,
        services: &Arc<S>,
        binding: &Binding<'_>,
        ask: Ask,
        live: impl Fn() -> bool,
    ) -> ErrorPayload {
        let Ask {
            summary,
            origin,
            presentation,
            requester,
            since_epoch,
            share,
            place,
        } = ask;
        self.expire_due(&**services);
        let (canonical, digest) = binding.canonical();
        let limits = services.confirmation_limits();
        let per_consumer = limits.per_consumer.max(1);
        // The clock may be host code: read before the store's lock.
        let now = services.clock_ms();
        let mut store = self.lock();
        // The asker's consumer was forgotten while its call ran (its session
        // ended): nobody is left to present an approval, so nobody is asked.
        if Self::forgotten_since(&store, binding.consumer_key, since_epoch) {
            return ErrorPayload::cancelled();
        }
        if !live() {
            return ErrorPayload::unmounted(crate::error::UnmountedPhase::MidFlight);
        }
        if let Some(record) = store
            .open
            .values()
            .find(|r| r.stage == Stage::Pending && r.digest == digest && r.binding == canonical)
        {
            return required_payload(&record.view);
        }
        // Shares are the principal's: identities acting for one party
        // draw on one share, and take turns inside it.
        let of_share = store.open.values().filter(|r| r.share == share).count();
        // Full across the replicas: only a request of this share held here
        // can give way (taking its place over).
        let full_everywhere = matches!(place, super::Place::Full);
        let giving_way = if of_share >= per_consumer || full_everywhere {
            quota::within_share(&store, &share, binding.consumer_key).ok_or(())
        } else if store.open.len() >= self.max_pending {
            quota::displaceable(&store, &share, of_share).ok_or(())
        } else {
            Ok(None)
        };
        let mut slot = match place {
            super::Place::Held(slot) => Some(slot),
            super::Place::Local | super::Place::Full => None,
        };
        let displaced = giving_way.ok().map(|giving_way| match giving_way {
            Some(id) => {
                // Inside its own share, the new request takes the place over.
                if full_everywhere && let Some(record) = store.open.get_mut(&id) {
                    slot = record.slot.take();
                }
                Self::withdraw_locked(&mut store, &**services, vec![id], quota::DISPLACED, now)
            }
            None => Vec::new(),
        });
        let Some(displaced) = displaced else {
            return ErrorPayload::rate_limited(
                crate::error::RateLimitReason::QueueFull,
                Some(FULL_RETRY_MS),
            );
        };
        let ttl = limits.ttl;
        let expires_at_ms = now.saturating_add(crate::util::millis::millis(ttl));
        let id: Arc<str> = Arc::from(services.mint_confirmation_id());
        let summary =
            display_text::truncate(&display_text::escape(&summary), MAX_SUMMARY_CHARS).into_owned();
        let view = PendingConfirmation {
            digest: Arc::from(digest.to_string()),
            confirmation_id: Arc::clone(&id),
            capability_id: Arc::clone(binding.capability_id),
            registration_id: Arc::clone(binding.registration_id),
            consumer_key: Arc::clone(binding.consumer_key),
            requester,
            presentation,
            effect: binding.effect,
            origin,
            summary,
            input: binding.effective_input.clone(),
            requested_at: rfc3339(now),
            expires_at: rfc3339(expires_at_ms),
            expires_at_ms,
            presence_required: services
                .presence()
                .is_some_and(|p| p.rule.applies(binding.capability_id, binding.effect)),
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
                resolution: None,
                withdrawn: None,
                used_elsewhere: false,
                waiters: 0,
                share,
                slot,
            },
        );
        drop(store);
        Self::announce_withdrawn(&**services, displaced, quota::DISPLACED);
        Self::audit(&**services, AuditKind::ConfirmationRequested, &view, None);
        services.emit(SurfaceEvent::ConfirmationRequested {
            confirmation_id: Arc::clone(&id),
            capability_id: Arc::clone(&view.capability_id),
            expires_at: view.expires_at.clone(),
            consumer_id: Arc::clone(&view.consumer_key),
            requester: view.requester.clone(),
            title: view.presentation.title.clone(),
        });
        // Expired on time where a timer runs (a runtime, a page); lookups
        // expire due records anyway. The deadline is the request's, not
        // the timer task's first run.
        let weak = Arc::downgrade(services);
        let due = crate::util::time::Instant::now().checked_add(ttl);
        crate::util::time::spawn(async move {
            match due {
                Some(due) => crate::util::time::sleep_until(due).await,
                None => std::future::pending().await,
            }
            // The registry's clock may read a little behind the timer's (a
            // page's two clocks round apart): the rest, once.
            let rest = weak.upgrade().map_or(0, |services| {
                expires_at_ms.saturating_sub(services.clock_ms())
            });
            if rest > 0 {
                crate::util::time::sleep(std::time::Duration::from_millis(rest)).await;
            }
            if let Some(services) = weak.upgrade() {
                services.confirmation_store().expire(&*services, &id);
            }
        });
        self.notify();
        payload
    }

    /// Phase 6 with evidence: reserves approved, matching evidence for this
    /// invocation and returns its id (the reservation wraps it).
    pub(in crate::confirmation) fn reserve<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &str,
        binding: &Binding<'_>,
    ) -> Result<Arc<str>, ErrorPayload> {
        self.expire_due(services);
        let (canonical, digest) = binding.canonical();
        // The clock may be host code: read before the store's lock.
        let now = services.clock_ms();
        let mut store = self.lock();
        if let Some(record) = store.open.get_mut(confirmation_id) {
            // Digest and exact canonical value must both match.
            if record.digest != digest || record.binding != canonical {
                // The asker's own request changed before the person
                // answered (the input it binds, such as a selection,
                // moved): the dialog must not keep offering what no longer
                // applies, so it is withdrawn visibly. An approval stays
                // usable for exactly the input approved.
                let own = *record.view.consumer_key == **binding.consumer_key
                    && *record.view.capability_id == **binding.capability_id
                    && record.stage == Stage::Pending;
                let id = Arc::clone(&record.view.confirmation_id);
                drop(store);
                if own {
                    self.withdraw_where(services, INPUT_CHANGED, |pending| {
                        pending.confirmation_id == id
                    });
                }
                return Err(invalid(ConfirmationInvalidReason::Mismatch));
            }
            match record.stage {
                Stage::Pending => return Err(required_payload(&record.view)),
                Stage::Approved { at_ms } => {
                    record.stage = Stage::Reserved { at_ms };
                    return Ok(Arc::clone(&record.view.confirmation_id));
                }
                // Another call holds it: single use, as if consumed.
                Stage::Reserved { .. } => return Err(invalid(ConfirmationInvalidReason::Consumed)),
                Stage::Denied | Stage::Expired | Stage::Withdrawn | Stage::Consumed => {}
            }
        }
        let Some(ended) = store
            .ended
            .as_mut()
            .and_then(|ended| ended.peek(confirmation_id, now))
        else {
            return Err(invalid(ConfirmationInvalidReason::Mismatch));
        };
        let withdrawn_for_this_caller = ended.stage == Stage::Withdrawn
            && ended.consumer_key == *binding.consumer_key
            && ended.capability_id == *binding.capability_id;
        if withdrawn_for_this_caller {
            return Err(invalid(ConfirmationInvalidReason::Withdrawn));
        }
        if ended.digest != digest || ended.binding != canonical {
            return Err(invalid(ConfirmationInvalidReason::Mismatch));
        }
        Err(match ended.stage {
            Stage::Denied => invalid(ConfirmationInvalidReason::Denied),
            Stage::Expired => invalid(ConfirmationInvalidReason::Expired),
            Stage::Withdrawn => invalid(ConfirmationInvalidReason::Withdrawn),
            Stage::Consumed | Stage::Pending | Stage::Approved { .. } | Stage::Reserved { .. } => {
                invalid(ConfirmationInvalidReason::Consumed)
            }
        })
    }

    /// Execution starts: the reserved record is consumed (single use).
    pub(super) fn consume<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &Arc<str>,
    ) -> Result<ConfirmationEvidence, ErrorPayload> {
        let now = services.clock_ms();
        let mut store = self.lock();
        let at_ms = match store.open.get(confirmation_id).map(|record| record.stage) {
            Some(Stage::Reserved { at_ms }) => at_ms,
            // Expired by disposal while reserved; nothing else ends a reservation.
            _ => return Err(invalid(ConfirmationInvalidReason::Expired)),
        };
        let Some((id, record)) = store.open.remove_entry(confirmation_id) else {
            return Err(invalid(ConfirmationInvalidReason::Expired));
        };
        let view = Self::end_used(&mut store, services, &id, record, at_ms, now);
        drop(store);
        Self::audit(services, AuditKind::ConfirmationConsumed, &view, None);
        Ok(ConfirmationEvidence {
            id: id.to_string(),
            approved_at: rfc3339(at_ms),
        })
    }

    /// Another replica ran a call with approval `confirmation_id` (held
    /// here, and published): the record ends as consumed, as if used here
    /// (once a call here holding it lets go).
    pub(in crate::confirmation) fn consumed_elsewhere<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &str,
    ) {
        let now = services.clock_ms();
        let mut store = self.lock();
        match store.open.get_mut(confirmation_id) {
            Some(record) if matches!(record.stage, Stage::Approved { .. }) => {}
            // A call here holds it (it will find the use taken): ended
            // when the call lets go.
            Some(record) if matches!(record.stage, Stage::Reserved { .. }) => {
                record.used_elsewhere = true;
                return;
            }
            _ => return,
        }
        let Some((id, record)) = store.open.remove_entry(confirmation_id) else {
            return;
        };
        let view = Self::end_used(&mut store, services, &id, record, now, now);
        drop(store);
        Self::audit(services, AuditKind::ConfirmationConsumed, &view, None);
        self.notify();
    }

    /// Ends `record` (approved at `approved_ms`) as used, here or on another
    /// replica, under the store's lock; what to audit once it is released
    /// (the audit sink is host code).
    fn end_used<S: ConfirmationServices + ?Sized>(
        store: &mut Store,
        services: &S,
        id: &Arc<str>,
        record: Record,
        approved_ms: u64,
        now: u64,
    ) -> PendingConfirmation {
        let view = record.view.clone();
        let resolution = record.resolution.clone().unwrap_or_else(|| {
            Self::unanswered(id, ConfirmationOutcome::Approved, None, approved_ms)
        });
        Self::end(
            store,
            services,
            id,
            record,
            Stage::Consumed,
            resolution,
            now,
        );
        view
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

    pub(super) fn watcher(
        &self,
        confirmation_id: &str,
    ) -> Option<watch::Receiver<Option<ConfirmationOutcome>>> {
        self.lock()
            .open
            .get(confirmation_id)
            .map(|record| record.resolved.subscribe())
    }

    fn notify(&self) {
        let Some(parts) = self.parts.get() else {
            return;
        };
        if parts.listeners.is_empty() {
            return;
        }
        let pending = self.pending();
        parts.listeners.call(&pending, "confirmation");
    }
}
