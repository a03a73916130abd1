//! A reservation: approved evidence held by one invocation between phase 6
//! and the start of its execution.
//!
//! Consumed when execution starts; dropped unconsumed (a precondition that
//! fails, a full queue, a cancellation while queued, an unmount) it gives
//! the approval back, so the agent's retry with the same confirmation id
//! works until the TTL. Every early return releases it by construction.

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
}

impl ConfirmationStore {
    /// Phase 6 with evidence: reserves approved, matching evidence for this
    /// invocation. The [`Reservation`] consumes it when execution starts
    /// and releases it if dropped before.
    pub(crate) fn redeem<S: StoreOwner>(
        &self,
        services: &Arc<S>,
        confirmation_id: &str,
        binding: &Binding<'_>,
    ) -> Result<Reservation, ErrorPayload> {
        let id = self.reserve(&**services, confirmation_id, binding)?;
        Ok(Reservation::new(services, id))
    }
}

impl Reservation {
    fn new<S: StoreOwner>(services: &Arc<S>, confirmation_id: Arc<str>) -> Reservation {
        let services: Weak<S> = Arc::downgrade(services);
        Reservation {
            services,
            confirmation_id,
            consumed: false,
        }
    }

    /// Execution starts: the evidence is used up and handed to the handler
    /// or executor. Fails only when the registry expired it (disposal).
    pub(crate) fn consume(mut self) -> Result<ConfirmationEvidence, ErrorPayload> {
        self.consumed = true;
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
        if self.consumed {
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
            .finish()
    }
}
