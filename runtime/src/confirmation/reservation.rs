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
    /// Another replica holds the approval: when it was approved (nothing
    /// is reserved here).
    elsewhere: Option<String>,
    /// The approval's single use across replicas, kept once consumed and
    /// given back when dropped before.
    single_use: Option<crate::store::Held>,
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
            let (single_use, approved_at) = super::approval_anywhere::redeem_elsewhere(
                &shared,
                confirmation_id,
                &binding.portable(),
                now,
            )
            .await?;
            let mut reservation =
                Reservation::new(services, Arc::from(confirmation_id), Some(approved_at));
            reservation.single_use = Some(single_use);
            return Ok(reservation);
        }
        let id = self.reserve(&**services, confirmation_id, binding)?;
        // Dropped on a refusal below: the local reservation is given back.
        let mut reservation = Reservation::new(services, id, None);
        let left = services.confirmation_limits().ttl;
        match super::approval_anywhere::claim_use(&shared, confirmation_id, left).await? {
            Some(single_use) => {
                reservation.single_use = Some(single_use);
                Ok(reservation)
            }
            // Redeemed on another replica meanwhile.
            None => Err(ErrorPayload::confirmation_invalid(
                crate::error::ConfirmationInvalidReason::Consumed,
            )),
        }
    }
}

impl Reservation {
    fn new<S: StoreOwner>(
        services: &Arc<S>,
        confirmation_id: Arc<str>,
        elsewhere: Option<String>,
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
        // Used: kept in the store until the approval's time is up.
        if let Some(single_use) = self.single_use.take() {
            single_use.keep();
        }
        if let Some(approved_at) = self.elsewhere.take() {
            return Ok(ConfirmationEvidence {
                id: self.confirmation_id.to_string(),
                approved_at,
            });
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
        // The single use, if held, is given back as its field drops.
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
