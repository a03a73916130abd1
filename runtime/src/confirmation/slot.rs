//! A request's place in its principal's share across replicas: with a
//! shared store, each open confirmation (pending, approved or reserved)
//! holds one place in the store's set for its principal, at most
//! `max_pending_confirmations_per_consumer` of them across every replica,
//! so N replicas allow the share once, not N times.
//!
//! A place is claimed before the request is made (the store is asked
//! before the confirmation store's lock is taken) and is given back when
//! the record leaves the open list — answered and consumed, denied,
//! expired or withdrawn — by dropping it; a request that displaces another
//! of its own share on this replica takes that one's place over. The store
//! failing refuses the request (`store-unavailable`): a share that cannot
//! be counted is not exceeded.

use std::time::Duration;

use super::services::ConfirmationServices;
use crate::error::ErrorPayload;
use crate::store::{Held, Lease};

/// How long a place outlives its request's time to live, for a record an
/// approval or a running call keeps open past it. A replica that dies
/// leaves its places until then.
const MARGIN: Duration = Duration::from_secs(600);

/// One place in a principal's shared share, given back when dropped.
pub(crate) type Slot = Held;

/// Where a new request stands in its principal's share.
pub(crate) enum Place {
    /// No shared store: the share is counted on this replica alone.
    Local,
    /// A place in the shared share, held by the request made with it.
    Held(Slot),
    /// The share is full across the replicas: only a request of the
    /// same share this replica holds can give way.
    Full,
}

impl Place {
    /// Claims a place in `share` for a new request of `services`' registry.
    pub(crate) async fn claim<S: ConfirmationServices + ?Sized>(
        services: &S,
        share: &str,
    ) -> Result<Place, ErrorPayload> {
        let Some(shared) = services.shared() else {
            return Ok(Place::Local);
        };
        let limits = services.confirmation_limits();
        let lease = Lease::new(crate::store::random()).within(
            &shared.namespace.confirmation_share(share),
            limits.per_consumer.max(1),
        );
        let key = shared.namespace.confirmation_slot(&crate::store::nonce());
        let ttl = limits.ttl.saturating_add(MARGIN);
        match Held::claim(&shared.store, key, lease, ttl).await {
            Ok(Ok(slot)) => Ok(Place::Held(slot)),
            // Nothing was claimed (a random key someone else holds counts
            // as full too).
            Ok(Err(_)) => Ok(Place::Full),
            Err(error) => {
                tracing::warn!(store = shared.store.name(), %error, "the shared store failed: the confirmation was not requested");
                Err(ErrorPayload::store_unavailable())
            }
        }
    }
}
