//! A reservation: approved evidence held by one invocation between phase 6
//! and the start of its execution.
//!
//! Consumed when execution starts; dropped unconsumed (a precondition that
//! fails, a full queue, a cancellation while queued, an unmount) it gives
//! the approval back, so the agent's retry with the same confirmation id
//! works until the TTL. Every early return releases it by construction.
//!
//! With a shared store a reservation also holds the approval's single use
//! across replicas ([`approval_anywhere`](super::approval_anywhere)), and
//! may reserve an approval another replica holds.

use std::sync::{Arc, Weak};

use super::store::{Binding, ConfirmationStore, StoreOwner};
use crate::context::ConfirmationEvidence;
use crate::error::ErrorPayload;

/// Approved evidence reserved for one invocation.
#[must_use = "dropping a reservation releases the approval"]
pub(crate) struct Reservation {
    /// Weak: a reservation never keeps a disposed registry alive.
    services: Weak<dyn StoreOwner>,
    confirmation_id: Arc<str>,
    /// Whether it was consumed (nothing to release).
    consumed: bool,
    /// Another replica holds the approval (nothing is reserved here).
    elsewhere: Option<Elsewhere>,
    /// The approval's single use across replicas, kept once consumed and
    /// given back when dropped before.
    single_use: Option<crate::store::Held>,
}

/// An approval another replica holds, reserved here.
struct Elsewhere {
    /// When it was approved.
    approved_at: String,
    /// The store through which its holder is told it was used.
    shared: crate::store::Attached,
    /// How long the approval has left.
    left: std::time::Duration,
}

impl ConfirmationStore {
    /// Phase 6 with evidence: reserves approved, matching evidence for this
    /// invocation. The [`Reservation`] consumes it when execution starts
    /// and releases it if dropped before.
    ///
    /// With a shared store, an approval this replica does not know is
    /// looked up among the other replicas' published ones, and every
    /// redemption claims the approval's single use in the store.
    pub(crate) async fn redeem<S: StoreOwner>(
        &self,
        services: &Arc<S>,
        confirmation_id: &str,
        binding: &Binding<'_>,
    ) -> Result<Reservation, ErrorPayload> {
        let Some(shared) = services.shared().cloned() else {
            let id = self.reserve(&**services, confirmation_id, binding)?;
            return Ok(Reservation::new(services, id, None));
        };
        if !self.knows(&**services, confirmation_id) {
            let now = services.clock_ms();
            let (single_use, approved_at, left) = super::approval_anywhere::redeem_elsewhere(
                &shared,
                confirmation_id,
                &binding.portable(),
                now,
            )
            .await?;
            let elsewhere = Elsewhere {
                approved_at,
                shared,
                left,
            };
            let mut reservation =
                Reservation::new(services, Arc::from(confirmation_id), Some(elsewhere));
            reservation.single_use = Some(single_use);
            return Ok(reservation);
        }
        let id = self.reserve(&**services, confirmation_id, binding)?;
        // Dropped on a refusal below: the local reservation is given back.
        let mut reservation = Reservation::new(services, id, None);
        let left = services.confirmation_limits().ttl;
        // Refused (used on another replica meanwhile): the reservation
        // drops, giving the local record back.
        let single_use =
            super::approval_anywhere::claim_use(&shared, confirmation_id, left).await?;
        reservation.single_use = Some(single_use);
        Ok(reservation)
    }
}

impl Reservation {
    fn new<S: StoreOwner>(
        services: &Arc<S>,
        confirmation_id: Arc<str>,
        elsewhere: Option<Elsewhere>,
    ) -> Reservation {
        let services: Weak<S> = Arc::downgrade(services);
        Reservation {
            services,
            confirmation_id,
            consumed: false,
            elsewhere,
            single_use: None,
        }
    }

    /// Execution starts: the evidence is used up and handed to the handler
    /// or executor. Fails only when the registry expired it (disposal).
    pub(crate) fn consume(mut self) -> Result<ConfirmationEvidence, ErrorPayload> {
        self.consumed = true;
        // Used: settled in the store (no replica uses it again); the
        // holder of another replica's approval is told so.
        let single_use = self.single_use.take();
        if let Some(elsewhere) = self.elsewhere.take() {
            if let Some(single_use) = single_use {
                super::approval_anywhere::used_elsewhere(
                    single_use,
                    elsewhere.shared,
                    Arc::clone(&self.confirmation_id),
                    elsewhere.left,
                );
            }
            return Ok(ConfirmationEvidence {
                id: self.confirmation_id.to_string(),
                approved_at: elsewhere.approved_at,
            });
        }
        if let Some(single_use) = single_use {
            super::approval_anywhere::used_here(single_use);
        }
        let Some(services) = self.services.upgrade() else {
            return Err(ErrorPayload::cancelled());
        };
        services
            .confirmation_store()
            .consume(&*services, &self.confirmation_id)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // The single use, if held, is given back as its field drops
        // (after the local record is: a retry waits for it).
        if self.consumed || self.elsewhere.is_some() {
            return;
        }
        if let Some(services) = self.services.upgrade() {
            services
                .confirmation_store()
                .release(&*services, &self.confirmation_id);
        }
    }
}

impl std::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reservation")
            .field("confirmation_id", &self.confirmation_id)
            .field("consumed", &self.consumed)
            .field("elsewhere", &self.elsewhere.is_some())
            .finish()
    }
}
