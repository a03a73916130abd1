//! An approval redeemed on any replica: with a shared store, the replica
//! holding an approved request publishes it — what it binds to, without
//! the replica's own registration id, and when it was approved — so an
//! agent's retry with the confirmation id is served by whichever replica
//! the load balancer picks. Single use holds across the replicas: every
//! redemption, the holder's own included, first claims the approval's use
//! in the store; a use that ran is kept until the approval's time is up,
//! and one given back (the call failed before it ran) leaves the approval
//! for the retry.
//!
//! Only an approval is redeemable, published by the replica that applied
//! the person's answer (through its declared channel, with any proof it
//! verified). An answer given through another replica is published before
//! that replica hears the verdict, a denial too (the retry is told
//! `denied` wherever it lands); an expiry is never redeemable anywhere.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ConfirmationOutcome, PendingConfirmation};
use crate::canonical::Canonical;
use crate::error::{ConfirmationInvalidReason, ErrorPayload};
use crate::store::{Attached, Held, Lease};
use agent_surface_rules::Effect;

/// How long an approval's use is kept past the approval's own time, for a
/// call that redeemed it near its end.
const MARGIN: Duration = Duration::from_secs(600);

/// An approval as the store keeps it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Approved {
    /// What the request binds to, as canonical JSON: matched by exact
    /// value, never by a hash alone.
    binding: String,
    approved_at: String,
    expires_at_ms: u64,
    /// Denied instead: the retry is told so on any replica.
    #[serde(default)]
    denied: bool,
}

/// What a request binds to, as canonical JSON the same on every replica
/// of one surface: capability, consumer, effective input and effect (the
/// registration id is each replica's own; the namespace is the surface's).
pub(crate) fn portable(
    capability_id: &str,
    consumer_key: &str,
    effective_input: &Value,
    effect: Effect,
) -> String {
    let value = serde_json::json!({
        "capabilityId": capability_id,
        "consumerKey": consumer_key,
        "effectiveInput": effective_input,
        "effect": effect.as_str(),
    });
    Canonical::of(&value).as_str().to_owned()
}

/// Publishes the answer to `request` (approved, or denied), given at
/// `answered_at`, for the other replicas, until the request's time is up
/// (`now_ms` now). Other outcomes are not published.
#[cfg_attr(all(target_arch = "wasm32", target_os = "unknown"), allow(dead_code))]
pub(crate) async fn publish(
    shared: &Attached,
    request: &PendingConfirmation,
    answered_at: &str,
    outcome: ConfirmationOutcome,
    now_ms: u64,
) {
    let denied = match outcome {
        ConfirmationOutcome::Approved => false,
        ConfirmationOutcome::Denied => true,
        ConfirmationOutcome::Expired | ConfirmationOutcome::Withdrawn => return,
    };
    let left = request.expires_at_ms.saturating_sub(now_ms);
    if left == 0 {
        return;
    }
    let approved = Approved {
        binding: portable(
            &request.capability_id,
            &request.consumer_key,
            &request.input,
            request.effect,
        ),
        approved_at: answered_at.to_owned(),
        expires_at_ms: request.expires_at_ms,
        denied,
    };
    let Ok(text) = serde_json::to_string(&approved) else {
        return;
    };
    let key = shared.namespace.approval(&request.confirmation_id);
    if let Err(error) = shared
        .store
        .put(&key, &text, Duration::from_millis(left))
        .await
    {
        tracing::warn!(store = shared.store.name(), %error, "an approval was not published to the other replicas: only this one redeems it");
    }
}

/// Claims the single use of approval `id` for a call, held until the call
/// consumes it (then kept) or gives it back; `Ok(None)`: another call, on
/// any replica, used it or holds it.
pub(crate) async fn claim_use(
    shared: &Attached,
    id: &str,
    left: Duration,
) -> Result<Option<Held>, ErrorPayload> {
    let key = shared.namespace.approval_use(id);
    let lease = Lease::new(crate::store::random());
    match Held::claim(&shared.store, key, lease, left.saturating_add(MARGIN)).await {
        Ok(Ok(held)) => Ok(Some(held)),
        Ok(Err(_)) => Ok(None),
        Err(error) => {
            tracing::warn!(store = shared.store.name(), %error, "the shared store failed: the approval was not redeemed");
            Err(ErrorPayload::store_unavailable())
        }
    }
}

/// Redeems here approval `id` another replica holds, for a call binding
/// `binding` (portable): its use, held, and when it was approved. Refused
/// as the holder would refuse it: not published (never approved, or
/// unknown) or another binding (by exact canonical value) is `mismatch`, its time up `expired`, used
/// or held by another call `consumed`.
pub(crate) async fn redeem_elsewhere(
    shared: &Attached,
    id: &str,
    binding: &str,
    now_ms: u64,
) -> Result<(Held, String), ErrorPayload> {
    let invalid = ErrorPayload::confirmation_invalid;
    let text = match shared.store.get(&shared.namespace.approval(id)).await {
        Ok(text) => text,
        Err(error) => {
            tracing::warn!(store = shared.store.name(), %error, "the shared store failed: the approval was not redeemed");
            return Err(ErrorPayload::store_unavailable());
        }
    };
    let Some(approved) = text.and_then(|text| serde_json::from_str::<Approved>(&text).ok()) else {
        return Err(invalid(ConfirmationInvalidReason::Mismatch));
    };
    if approved.binding != binding {
        return Err(invalid(ConfirmationInvalidReason::Mismatch));
    }
    if approved.denied {
        return Err(invalid(ConfirmationInvalidReason::Denied));
    }
    let left = approved.expires_at_ms.saturating_sub(now_ms);
    if left == 0 {
        return Err(invalid(ConfirmationInvalidReason::Expired));
    }
    match claim_use(shared, id, Duration::from_millis(left)).await? {
        Some(held) => Ok((held, approved.approved_at)),
        None => Err(invalid(ConfirmationInvalidReason::Consumed)),
    }
}

impl super::Binding<'_> {
    /// What the call binds to, as every replica writes it.
    pub(crate) fn portable(&self) -> String {
        portable(
            self.capability_id,
            self.consumer_key,
            self.effective_input,
            self.effect,
        )
    }
}
