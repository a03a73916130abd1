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

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ConfirmationOutcome, PendingConfirmation};
use crate::canonical::Canonical;
use crate::error::{ConfirmationInvalidReason, ErrorPayload};
use crate::store::{Attached, Claim, Held, Lease};
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
    /// Ended unused on its holder (`withdrawn`, `expired`): redeemable
    /// nowhere, whoever holds its use for a moment.
    #[serde(default)]
    revoked: Option<String>,
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
    let left = Duration::from_millis(request.expires_at_ms.saturating_sub(now_ms));
    write(shared, request, answered_at, denied, None, left).await;
}

/// Writes `request`'s published record for `left`.
async fn write(
    shared: &Attached,
    request: &PendingConfirmation,
    answered_at: &str,
    denied: bool,
    revoked: Option<&str>,
    left: Duration,
) {
    if left.is_zero() {
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
        revoked: revoked.map(str::to_owned),
    };
    let Ok(text) = serde_json::to_string(&approved) else {
        return;
    };
    let key = shared.namespace.approval(&request.confirmation_id);
    if let Err(error) = shared.store.put(&key, &text, left).await {
        tracing::warn!(store = shared.store.name(), %error, "an approval was not published to the other replicas: only this one redeems it");
    }
}

/// How long a redemption waits for another call holding the approval's
/// use to let it go (it failed before running) or use it.
const USE_WAIT: Duration = Duration::from_secs(2);

/// How an approval's use ended, as the store keeps it.
const CONSUMED: &str = "consumed";
/// The holder withdrew the approval before anyone used it.
pub(crate) const WITHDRAWN: &str = "withdrawn";
/// The approval's time ran out (or its holder went away) unused.
pub(crate) const EXPIRED: &str = "expired";

/// The lease on approval `id`'s use: every replica's has the same
/// fingerprint, so a claim finds another's use running or settled.
fn use_lease(id: &str) -> Lease {
    let digest = crate::canonical::Sha256Digest::of(&Value::String(id.to_owned()));
    let mut bytes = [0u8; 16];
    for (slot, byte) in bytes.iter_mut().zip(digest.0) {
        *slot = byte;
    }
    Lease::new(crate::store::Fingerprint::from_bytes(bytes))
}

/// The refusal of a use that ended `how`.
fn ended(how: &str) -> ErrorPayload {
    ErrorPayload::confirmation_invalid(match how {
        WITHDRAWN => ConfirmationInvalidReason::Withdrawn,
        EXPIRED => ConfirmationInvalidReason::Expired,
        _ => ConfirmationInvalidReason::Consumed,
    })
}

/// Claims the single use of approval `id` for a call, for `left` (the
/// approval's time) and a margin: held until the call uses it (settled)
/// or gives it back. Another call holding it is waited for a moment (it
/// may give it back); still held, or used, the approval is `consumed`;
/// withdrawn or expired on its holder, so.
pub(crate) async fn claim_use(
    shared: &Attached,
    id: &str,
    left: Duration,
) -> Result<Held, ErrorPayload> {
    let key = shared.namespace.approval_use(id);
    let ttl = left.saturating_add(MARGIN);
    match Held::claim_within(&shared.store, key, use_lease(id), ttl, USE_WAIT).await {
        Ok(Ok(held)) => Ok(held),
        Ok(Err(Claim::Settled(how))) => Err(ended(&how)),
        Ok(Err(_)) => Err(ended(CONSUMED)),
        Err(error) => {
            tracing::warn!(store = shared.store.name(), %error, "the shared store failed: the approval was not redeemed");
            Err(ErrorPayload::store_unavailable())
        }
    }
}

/// The call holding `single_use` used the approval on its holder.
pub(crate) fn used_here(single_use: Held) {
    single_use.settle(CONSUMED, async {});
}

/// The call holding `single_use` used approval `id` held by another
/// replica, which is then told so (it ends its record as consumed).
pub(crate) fn used_elsewhere(single_use: Held, shared: Attached, id: Arc<str>, left: Duration) {
    single_use.settle(CONSUMED, async move {
        let key = shared.namespace.approval_used(&id);
        if let Err(error) = shared.store.put(&key, CONSUMED, left.max(Duration::from_secs(1))).await {
            tracing::warn!(store = shared.store.name(), %error, "the replica holding an approval was not told it was used: its record ends with its time");
        }
    })
}

/// The holder ended `request`'s approval unused (`how`: withdrawn or
/// expired), `left` before its time was up: it is marked so where it is
/// published — every later redemption, on any replica, is refused so, even
/// one that claims its use a moment after a call holding it let go — and
/// its use is settled so when free. A call on another replica that claimed
/// its use before the mark goes on, as a call holding a reservation here
/// would.
#[cfg_attr(all(target_arch = "wasm32", target_os = "unknown"), allow(dead_code))]
pub(crate) async fn revoke(
    shared: &Attached,
    request: &PendingConfirmation,
    how: &'static str,
    left: Duration,
) {
    write(shared, request, "", false, Some(how), left).await;
    let id = &request.confirmation_id;
    let key = shared.namespace.approval_use(id);
    if let Ok(Ok(held)) = Held::claim(
        &shared.store,
        key,
        use_lease(id),
        left.saturating_add(MARGIN),
    )
    .await
    {
        held.settle(how, async {});
    }
}

/// The published record of approval `id`: `Ok(None)` when there is none.
async fn published(shared: &Attached, id: &str) -> Result<Option<Approved>, ErrorPayload> {
    match shared.store.get(&shared.namespace.approval(id)).await {
        Ok(text) => Ok(text.and_then(|text| serde_json::from_str::<Approved>(&text).ok())),
        Err(error) => {
            tracing::warn!(store = shared.store.name(), %error, "the shared store failed: the approval was not redeemed");
            Err(ErrorPayload::store_unavailable())
        }
    }
}

/// Redeems here approval `id` another replica holds, for a call binding
/// `binding` (portable): its use, held, and when it was approved. Refused
/// as the holder would refuse it: not published (never approved, or
/// unknown) or another binding (by exact canonical value) is `mismatch`;
/// denied `denied`; its time up `expired`; withdrawn `withdrawn`; used or
/// held by another call `consumed`.
pub(crate) async fn redeem_elsewhere(
    shared: &Attached,
    id: &str,
    binding: &str,
    now_ms: u64,
) -> Result<(Held, String, Duration), ErrorPayload> {
    let invalid = ErrorPayload::confirmation_invalid;
    let Some(approved) = published(shared, id).await? else {
        return Err(invalid(ConfirmationInvalidReason::Mismatch));
    };
    if approved.binding != binding {
        return Err(invalid(ConfirmationInvalidReason::Mismatch));
    }
    if approved.denied {
        return Err(invalid(ConfirmationInvalidReason::Denied));
    }
    if let Some(how) = &approved.revoked {
        return Err(ended(how));
    }
    let left = approved.expires_at_ms.saturating_sub(now_ms);
    if left == 0 {
        return Err(invalid(ConfirmationInvalidReason::Expired));
    }
    let left = Duration::from_millis(left);
    let held = claim_use(shared, id, left).await?;
    // Revoked while the use was being claimed (a call holding it let go
    // after its holder withdrew it): `held` gives the use back.
    match published(shared, id).await? {
        Some(now) if now.revoked.is_none() => Ok((held, approved.approved_at, left)),
        Some(now) => Err(ended(now.revoked.as_deref().unwrap_or(EXPIRED))),
        None => Err(invalid(ConfirmationInvalidReason::Expired)),
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
