//! Confirmations across replicas: a registry with a shared store offers its
//! pending requests there, so a console on any replica lists them, and
//! carries a person's answer given on another replica to the replica that
//! holds the request, which applies it as its own — checking the channel
//! and verifying any proof of presence itself — and reports its verdict
//! back. Woken by the store's announcements, never by polling.
//!
//! The request, its binding and its single use stay with the replica that
//! holds it (the call waits there): an answer is applied at most once (the
//! first answer written wins), and only while the request is pending.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use super::{
    Approver, ChannelKind, ConfirmationOutcome, Confirmations, PendingConfirmation, PersonVerified,
    PresenceMethod, PresenceRefusal, Presentation, Resolution, ResolveError, ShownRequest,
    StoreOwner,
};
use crate::store::Attached;
use agent_surface_rules::Effect;

/// How long a replica waits for the holding replica's verdict on an answer.
pub const VERDICT_WAIT: Duration = Duration::from_secs(10);

/// How long a verdict is kept for the answering replica to read.
const VERDICT_TTL: Duration = Duration::from_secs(60);

/// Pending requests of other replicas read at most, per listing.
const MAX_LISTED: usize = 1_000;

/// A pending request as the store keeps it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Offered {
    confirmation_id: String,
    digest: String,
    capability_id: String,
    registration_id: String,
    consumer_key: String,
    requester: Option<String>,
    presentation: Presentation,
    effect: Effect,
    origin: String,
    summary: String,
    input: Value,
    requested_at: String,
    expires_at: String,
    expires_at_ms: u64,
    presence_required: bool,
}

impl Offered {
    fn of(pending: &PendingConfirmation) -> Offered {
        Offered {
            confirmation_id: pending.confirmation_id.to_string(),
            digest: pending.digest.to_string(),
            capability_id: pending.capability_id.to_string(),
            registration_id: pending.registration_id.to_string(),
            consumer_key: pending.consumer_key.to_string(),
            requester: pending.requester.as_deref().map(str::to_owned),
            presentation: pending.presentation.clone(),
            effect: pending.effect,
            origin: pending.origin.to_owned(),
            summary: pending.summary.clone(),
            input: pending.input.clone(),
            requested_at: pending.requested_at.clone(),
            expires_at: pending.expires_at.clone(),
            expires_at_ms: pending.expires_at_ms,
            presence_required: pending.presence_required,
        }
    }

    fn into_pending(self) -> PendingConfirmation {
        PendingConfirmation {
            confirmation_id: Arc::from(self.confirmation_id),
            digest: Arc::from(self.digest),
            capability_id: Arc::from(self.capability_id),
            registration_id: Arc::from(self.registration_id),
            consumer_key: Arc::from(self.consumer_key),
            requester: self.requester.map(Arc::from),
            presentation: self.presentation,
            effect: self.effect,
            origin: if self.origin == "server" {
                "server"
            } else {
                "client"
            },
            summary: self.summary,
            input: self.input,
            requested_at: self.requested_at,
            expires_at: self.expires_at,
            expires_at_ms: self.expires_at_ms,
            presence_required: self.presence_required,
        }
    }
}

/// A person's answer, as the answering replica writes it.
#[derive(Serialize, Deserialize)]
struct Answer {
    /// Names this answer's verdict.
    nonce: String,
    digest: String,
    approved: bool,
    channel: String,
    person: String,
    #[serde(default)]
    proof: Option<Value>,
    /// An agent-connection channel's answer: the consumer whose own
    /// requests alone it answers.
    #[serde(default)]
    connection: Option<String>,
}

/// The holding replica's verdict.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Verdict {
    /// The refusal (`None`: resolved).
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    approver: Option<String>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    credential_id: Option<String>,
    #[serde(default)]
    at: String,
}

fn refusal_str(error: ResolveError) -> String {
    match error {
        ResolveError::Unknown => "unknown".to_owned(),
        ResolveError::NotPending => "not-pending".to_owned(),
        ResolveError::NotShown => "not-shown".to_owned(),
        ResolveError::NotPermitted => "not-permitted".to_owned(),
        ResolveError::PresenceRequired => "presence-required".to_owned(),
        ResolveError::Unreachable => "unreachable".to_owned(),
        ResolveError::PresenceRefused(refusal) => format!("presence-refused:{}", refusal.as_str()),
    }
}

fn refusal_of(text: &str) -> ResolveError {
    const REFUSALS: [PresenceRefusal; 8] = [
        PresenceRefusal::NotRegistered,
        PresenceRefusal::NotVerified,
        PresenceRefusal::OtherRequest,
        PresenceRefusal::Replayed,
        PresenceRefusal::Exhausted,
        PresenceRefusal::Invalid,
        PresenceRefusal::Expired,
        PresenceRefusal::Unavailable,
    ];
    match text {
        "unknown" => ResolveError::Unknown,
        "not-pending" => ResolveError::NotPending,
        "not-shown" => ResolveError::NotShown,
        "not-permitted" => ResolveError::NotPermitted,
        "presence-required" => ResolveError::PresenceRequired,
        other => match other.strip_prefix("presence-refused:") {
            Some(refusal) => ResolveError::PresenceRefused(
                REFUSALS
                    .into_iter()
                    .find(|known| known.as_str() == refusal)
                    .unwrap_or(PresenceRefusal::Invalid),
            ),
            None => ResolveError::Unreachable,
        },
    }
}

impl Verdict {
    fn of(result: &Result<Resolution, ResolveError>) -> Verdict {
        match result {
            Ok(resolution) => Verdict {
                error: None,
                outcome: Some(resolution.outcome.as_str().to_owned()),
                channel: resolution.channel.as_deref().map(str::to_owned),
                approver: resolution.approver.as_deref().map(str::to_owned),
                method: resolution
                    .person_verified
                    .as_ref()
                    .map(|verified| verified.method.as_str().to_owned()),
                credential_id: resolution
                    .person_verified
                    .as_ref()
                    .map(|verified| verified.credential_id.to_string()),
                at: resolution.at.clone(),
            },
            Err(error) => Verdict {
                error: Some(refusal_str(*error)),
                outcome: None,
                channel: None,
                approver: None,
                method: None,
                credential_id: None,
                at: String::new(),
            },
        }
    }

    fn into_result(self, confirmation_id: &Arc<str>) -> Result<Resolution, ResolveError> {
        if let Some(error) = self.error {
            return Err(refusal_of(&error));
        }
        let outcome = match self.outcome.as_deref() {
            Some("approved") => ConfirmationOutcome::Approved,
            Some("denied") => ConfirmationOutcome::Denied,
            _ => return Err(ResolveError::Unreachable),
        };
        let person_verified = match (self.method.as_deref(), self.credential_id) {
            (Some(method), Some(credential_id)) => Some(PersonVerified {
                method: if method == PresenceMethod::Webauthn.as_str() {
                    PresenceMethod::Webauthn
                } else {
                    PresenceMethod::OutOfBand
                },
                credential_id: Arc::from(credential_id),
            }),
            _ => None,
        };
        Ok(Resolution {
            confirmation_id: Arc::clone(confirmation_id),
            outcome,
            channel: self.channel.map(Arc::from),
            channel_kind: Some(ChannelKind::InApp),
            approver: self.approver.map(Arc::from),
            reason: None,
            person_verified,
            at: self.at,
        })
    }
}

/// Starts offering `services`' pending requests in its shared store and
/// applying the answers given on other replicas, on the current tokio
/// runtime; `false` when there is none (then nothing is relayed).
pub(crate) fn start(services: &Arc<dyn StoreOwner>) -> bool {
    let Some(shared) = services.shared().cloned() else {
        return false;
    };
    let (changes, pending) = watch::channel(Vec::new());
    let weak = Arc::downgrade(services);
    let started = crate::util::time::spawn(offer(weak, shared, pending));
    if started {
        // The listener holds only the channel: the registry's drop drops
        // it, which ends the relay.
        let _ =
            services
                .confirmation_store()
                .listeners()
                .add(move |list: &[PendingConfirmation]| {
                    changes.send_replace(list.to_vec());
                });
    }
    started
}

/// Mirrors the pending list into the store; one answer watcher per offered
/// request (bounded by the pending bound).
async fn offer(
    services: Weak<dyn StoreOwner>,
    shared: Attached,
    mut pending: watch::Receiver<Vec<PendingConfirmation>>,
) {
    let store = &*shared.store;
    let namespace = &shared.namespace;
    // Each offered request's answer watcher, stopped (between answers,
    // never while it applies one) once the request leaves the list.
    let mut offered: HashMap<Arc<str>, tokio_util::sync::CancellationToken> = HashMap::new();
    // Approvals published (those still open, bounded by the open list),
    // each with the watcher of its use on another replica and when its
    // time is up.
    let mut published: HashMap<Arc<str>, Published> = HashMap::new();
    while pending.changed().await.is_ok() {
        let list = pending.borrow_and_update().clone();
        let now = services.upgrade().map_or(0, |services| services.clock_ms());
        for request in &list {
            if offered.contains_key(&request.confirmation_id) {
                continue;
            }
            let ttl = Duration::from_millis(request.expires_at_ms.saturating_sub(now).max(1));
            let Ok(text) = serde_json::to_string(&Offered::of(request)) else {
                continue;
            };
            let id = &request.confirmation_id;
            let written = match store.put(&namespace.confirmation(id), &text, ttl).await {
                Ok(()) => store.enroll(&namespace.confirmations(), id, ttl).await,
                Err(error) => Err(error),
            };
            if let Err(error) = written {
                tracing::warn!(store = store.name(), %error, "a pending confirmation was not offered to the other replicas");
            }
            let watching = tokio_util::sync::CancellationToken::new();
            tokio::spawn(apply(
                services.clone(),
                shared.clone(),
                Arc::clone(id),
                watching.clone(),
            ));
            offered.insert(Arc::clone(id), watching);
        }
        let gone: Vec<Arc<str>> = offered
            .keys()
            .filter(|id| !list.iter().any(|request| request.confirmation_id == **id))
            .cloned()
            .collect();
        for id in gone {
            if let Some(watcher) = offered.remove(&id) {
                watcher.cancel();
            }
            let _ = store.remove(&namespace.confirmation(&id)).await;
            let _ = store.unenroll(&namespace.confirmations(), &id).await;
            // An adapter's round about it is answered, or answers nothing.
            let _ = store.remove(&namespace.round(&id)).await;
        }
        // Approved here, however answered: redeemable on any replica.
        let Some(live) = services.upgrade() else {
            continue;
        };
        let approved = live.confirmation_store().approved();
        let now = live.clock_ms();
        let ended: Vec<Arc<str>> = published
            .keys()
            .filter(|id| {
                !approved
                    .iter()
                    .any(|(request, _)| request.confirmation_id == **id)
            })
            .cloned()
            .collect();
        for id in ended {
            let Some(Published {
                request, watcher, ..
            }) = published.remove(&id)
            else {
                continue;
            };
            watcher.cancel();
            // Used (its use is settled already), or ended unused: then its
            // use is settled so, and no replica redeems it any more.
            let how = match Confirmations::new(Arc::clone(&live))
                .resolution(&id)
                .map(|resolution| resolution.outcome)
            {
                Some(ConfirmationOutcome::Approved) => None,
                Some(ConfirmationOutcome::Withdrawn) => Some(super::approval_anywhere::WITHDRAWN),
                _ => Some(super::approval_anywhere::EXPIRED),
            };
            if let Some(how) = how {
                let left = Duration::from_millis(request.expires_at_ms.saturating_sub(now));
                super::approval_anywhere::revoke(&shared, &request, how, left).await;
            }
        }
        for (request, at) in approved {
            if published.contains_key(&request.confirmation_id) {
                continue;
            }
            super::approval_anywhere::publish(
                &shared,
                &request,
                &at,
                ConfirmationOutcome::Approved,
                now,
            )
            .await;
            let watching = tokio_util::sync::CancellationToken::new();
            tokio::spawn(watch_used(
                services.clone(),
                shared.clone(),
                Arc::clone(&request.confirmation_id),
                watching.clone(),
            ));
            let left = Duration::from_millis(request.expires_at_ms.saturating_sub(now));
            let until = crate::util::time::Instant::now().checked_add(left);
            published.insert(
                Arc::clone(&request.confirmation_id),
                Published {
                    request,
                    watcher: watching,
                    until,
                },
            );
        }
    }
    // The registry went away: its requests with it, and its approvals.
    for (id, watcher) in offered {
        watcher.cancel();
        let _ = store.remove(&namespace.confirmation(&id)).await;
        let _ = store.unenroll(&namespace.confirmations(), &id).await;
    }
    for (_, published) in published {
        published.watcher.cancel();
        let left = published.until.map_or(Duration::ZERO, |until| {
            until.saturating_duration_since(crate::util::time::Instant::now())
        });
        let expired = super::approval_anywhere::EXPIRED;
        super::approval_anywhere::revoke(&shared, &published.request, expired, left).await;
    }
}

/// An approval this replica published.
struct Published {
    request: PendingConfirmation,
    /// Stops the watcher of its use on another replica.
    watcher: tokio_util::sync::CancellationToken,
    /// When its time is up.
    until: Option<crate::util::time::Instant>,
}

/// What `key` holds once it holds something (the store's failures
/// retried, backing off); `None` once `watching` is cancelled.
async fn watched(
    store: &dyn crate::store::SharedStore,
    key: &str,
    watching: &tokio_util::sync::CancellationToken,
) -> Option<String> {
    let mut backoff = Duration::from_millis(100);
    loop {
        let seen = tokio::select! {
            () = watching.cancelled() => return None,
            seen = store.watch(key) => seen,
        };
        match seen {
            Ok(text) => return Some(text),
            Err(error) => {
                tracing::warn!(store = store.name(), %error, "the other replicas' messages cannot be read; retrying");
                tokio::select! {
                    () = watching.cancelled() => return None,
                    () = crate::util::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Waits until another replica says it used approval `id` (held here and
/// published), then ends the record here as consumed.
async fn watch_used(
    services: Weak<dyn StoreOwner>,
    shared: Attached,
    id: Arc<str>,
    watching: tokio_util::sync::CancellationToken,
) {
    let key = shared.namespace.approval_used(&id);
    if watched(&*shared.store, &key, &watching).await.is_none() {
        return;
    }
    if let Some(services) = services.upgrade() {
        services
            .confirmation_store()
            .consumed_elsewhere(&*services, &id);
    }
    let _ = shared.store.remove(&key).await;
}

/// Waits for answers to `id` given on other replicas, applies each here
/// and writes its verdict, until one resolves it (or the relay stops
/// watching: the request left the pending list). A refused answer (a
/// channel this replica does not declare, a missing proof) leaves the
/// request open for the next; the store's failures are retried.
async fn apply(
    services: Weak<dyn StoreOwner>,
    shared: Attached,
    id: Arc<str>,
    watching: tokio_util::sync::CancellationToken,
) {
    let store = &*shared.store;
    let key = shared.namespace.answer(&id);
    loop {
        let Some(text) = watched(store, &key, &watching).await else {
            return;
        };
        let Some(services) = services.upgrade() else {
            return;
        };
        let confirmations = Confirmations::new(Arc::clone(&services));
        let request = confirmations.find(&id);
        let answer = serde_json::from_str::<Answer>(&text).ok();
        let result = match &answer {
            Some(answer) => {
                let shown = ShownRequest {
                    confirmation_id: Arc::clone(&id),
                    digest: Arc::from(answer.digest.as_str()),
                };
                // An in-app channel this replica declares, or a consumer's
                // own connection (its own requests alone).
                let approver = match &answer.connection {
                    Some(consumer) => Ok(Approver {
                        channel: Arc::from(answer.channel.as_str()),
                        kind: ChannelKind::AgentConnection,
                        approver: Arc::from(answer.person.as_str()),
                        connection: Some(Arc::from(consumer.as_str())),
                    }),
                    None => confirmations.approver(&answer.channel, &answer.person),
                };
                match approver {
                    Ok(approver) => match (&answer.proof, answer.approved) {
                        (Some(proof), true) => {
                            confirmations.approve_with_presence(&shown, &approver, proof)
                        }
                        (_, approved) => confirmations.resolve(&shown, approved, &approver),
                    },
                    Err(_) => Err(ResolveError::NotPermitted),
                }
            }
            None => Err(ResolveError::NotShown),
        };
        // Answered: published for every replica before the answerer hears
        // so (the agent's retry may land anywhere).
        if let (Ok(resolution), Some(request)) = (&result, &request) {
            super::approval_anywhere::publish(
                &shared,
                request,
                &resolution.at,
                resolution.outcome,
                services.clock_ms(),
            )
            .await;
        }
        if let (Some(answer), Ok(verdict)) = (&answer, serde_json::to_string(&Verdict::of(&result)))
        {
            let _ = store
                .put(
                    &shared.namespace.verdict(&id, &answer.nonce),
                    &verdict,
                    VERDICT_TTL,
                )
                .await;
        }
        let open = confirmations.find(&id).is_some();
        if result.is_ok() || !open {
            return;
        }
        // Refused and still open: the next answer may come.
        let _ = store.remove(&key).await;
    }
}

impl Confirmations {
    /// The requests waiting for the person on every replica, oldest
    /// first: this registry's and, with a shared store, the others' as
    /// they offered them (the store's failure lists this replica's alone).
    pub async fn pending_everywhere(&self) -> Vec<PendingConfirmation> {
        let mut pending = self.pending();
        let Some(shared) = self.services.shared() else {
            return pending;
        };
        let store = &*shared.store;
        let ids = match store
            .members(&shared.namespace.confirmations(), MAX_LISTED)
            .await
        {
            Ok(ids) => ids,
            Err(error) => {
                tracing::warn!(store = store.name(), %error, "the other replicas' confirmations could not be listed");
                return pending;
            }
        };
        for id in ids {
            if pending.iter().any(|local| *local.confirmation_id == *id) {
                continue;
            }
            if let Ok(Some(text)) = store.get(&shared.namespace.confirmation(&id)).await
                && let Ok(offered) = serde_json::from_str::<Offered>(&text)
            {
                pending.push(offered.into_pending());
            }
        }
        pending.sort_by(|a, b| a.requested_at.cmp(&b.requested_at));
        pending
    }

    /// The request `confirmation_id` while it is pending, here or (with a
    /// shared store) on another replica as it offered it.
    pub async fn find_anywhere(&self, confirmation_id: &str) -> Option<PendingConfirmation> {
        if let Some(here) = self.find(confirmation_id) {
            return Some(here);
        }
        let shared = self.services.shared()?;
        let text = shared
            .store
            .get(&shared.namespace.confirmation(confirmation_id))
            .await
            .ok()??;
        serde_json::from_str::<Offered>(&text)
            .ok()
            .map(Offered::into_pending)
    }

    /// Answers `shown` wherever it is pending: here, as
    /// [`resolve`](Self::resolve) (or
    /// [`approve_with_presence`](Self::approve_with_presence) with
    /// `proof`) would; on another replica sharing the store, by writing the
    /// answer for that replica to apply — checking the channel and any
    /// proof itself — and waiting for its verdict (at most
    /// [`VERDICT_WAIT`]). The first answer to a request wins; another is
    /// refused ([`ResolveError::NotPending`]). An in-app channel's answer
    /// travels between replicas, and an agent connection's
    /// ([`connection_approver`](Self::connection_approver)) for its own
    /// consumer's requests alone.
    pub async fn answer_anywhere(
        &self,
        shown: &ShownRequest,
        approved: bool,
        approver: &Approver,
        proof: Option<&Value>,
    ) -> Result<Resolution, ResolveError> {
        let here = self.find(&shown.confirmation_id).is_some();
        let shared = match self.services.shared() {
            Some(shared) if !here => shared,
            _ => {
                return match (proof, approved) {
                    (Some(proof), true) => self.approve_with_presence(shown, approver, proof),
                    (_, approved) => self.resolve(shown, approved, approver),
                };
            }
        };
        let connection = match (approver.kind(), &approver.connection) {
            (ChannelKind::InApp, _) => None,
            (ChannelKind::AgentConnection, Some(consumer)) => Some(consumer.to_string()),
            _ => return Err(ResolveError::NotPermitted),
        };
        let store = &*shared.store;
        let namespace = &shared.namespace;
        let id = &shown.confirmation_id;
        let offered = match store.get(&namespace.confirmation(id)).await {
            Ok(Some(text)) => {
                serde_json::from_str::<Offered>(&text).map_err(|_| ResolveError::Unreachable)?
            }
            Ok(None) => return Err(ResolveError::NotPending),
            Err(_) => return Err(ResolveError::Unreachable),
        };
        if offered.digest != *shown.digest {
            return Err(ResolveError::NotShown);
        }
        if connection
            .as_deref()
            .is_some_and(|consumer| consumer != offered.consumer_key)
        {
            return Err(ResolveError::NotPermitted);
        }
        let nonce = crate::store::nonce();
        let answer = Answer {
            nonce: nonce.clone(),
            digest: shown.digest.to_string(),
            approved,
            channel: approver.channel().to_owned(),
            person: approver.approver().to_owned(),
            proof: proof.cloned(),
            connection,
        };
        let text = serde_json::to_string(&answer).map_err(|_| ResolveError::Unreachable)?;
        // The answer lives as long as this replica waits for its verdict:
        // one it gave up on is not applied later.
        match store
            .put_new(&namespace.answer(id), &text, VERDICT_WAIT)
            .await
        {
            Ok(true) => {}
            Ok(false) => return Err(ResolveError::NotPending),
            Err(_) => return Err(ResolveError::Unreachable),
        }
        let verdict_key = namespace.verdict(id, &nonce);
        let verdict =
            match crate::util::time::timeout(VERDICT_WAIT, store.watch(&verdict_key)).await {
                Ok(Ok(verdict)) => verdict,
                // Given up: the answer is taken back unless the holder took
                // it meanwhile, whose verdict is then read once more.
                _ => {
                    let _ = store.remove(&namespace.answer(id)).await;
                    match store.get(&verdict_key).await {
                        Ok(Some(verdict)) => verdict,
                        _ => return Err(ResolveError::Unreachable),
                    }
                }
            };
        serde_json::from_str::<Verdict>(&verdict)
            .map_err(|_| ResolveError::Unreachable)?
            .into_result(id)
    }
}
