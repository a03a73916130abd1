//! A reservation: approved evidence held by one invocation between phase 6
//! and the start of its execution.
//!
//! Consumed when execution starts; dropped unconsumed (a precondition that
//! fails, a full queue, a cancellation while queued, an unmount) it gives
//! the approval back, so the agent's retry with the same confirmation id
//! works until the TTL. Every early return releases it by construction.

use std::sync::{Arc, Weak};

use crate::context::ConfirmationEvidence;
use crate::error::ErrorPayload;
use crate::registry::{Inner, Registry};

/// Approved evidence reserved for one invocation.
#[must_use = "dropping a reservation releases the approval"]
pub(crate) struct Reservation {
    /// Weak: a reservation never keeps a disposed registry alive.
    registry: Weak<Inner>,
    confirmation_id: Arc<str>,
    /// Whether it was consumed (nothing to release).
    consumed: bool,
}

impl Reservation {
    pub(super) fn new(registry: &Registry, confirmation_id: Arc<str>) -> Reservation {
        Reservation {
            registry: Arc::downgrade(&registry.inner),
            confirmation_id,
            consumed: false,
        }
    }

    /// Execution starts: the evidence is used up and handed to the handler
    /// or executor. Fails only when the registry expired it (disposal).
    pub(crate) fn consume(mut self) -> Result<ConfirmationEvidence, ErrorPayload> {
        self.consumed = true;
        let Some(inner) = self.registry.upgrade() else {
            return Err(ErrorPayload::cancelled());
        };
        let registry = Registry { inner };
        registry
            .inner
            .confirmations
            .consume(&registry, &self.confirmation_id)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.consumed {
            return;
        }
        if let Some(inner) = self.registry.upgrade() {
            let registry = Registry { inner };
            registry
                .inner
                .confirmations
                .release(&registry, &self.confirmation_id);
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
