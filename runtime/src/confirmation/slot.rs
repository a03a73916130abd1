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

use std::sync::Arc;
use std::time::Duration;

use super::services::ConfirmationServices;
use crate::error::ErrorPayload;
use crate::store::{Claim, Lease, SharedStore};

/// How long a place outlives its request's time to live, for a record an
/// approval or a running call keeps open past it. A replica that dies
/// leaves its places until then.
const MARGIN: Duration = Duration::from_secs(600);

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

/// One place in a principal's shared share, given back when dropped.
pub(crate) struct Slot {
    /// `None` once nothing is left to give back.
    store: Option<Arc<dyn SharedStore>>,
    key: String,
    lease: Lease,
    /// The runtime the place was claimed on, which gives it back (the
    /// record may end on a host thread outside any runtime).
    runtime: tokio::runtime::Handle,
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
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Ok(Place::Local);
        };
        let limits = services.confirmation_limits();
        let lease = Lease::new(crate::store::random()).within(
            &shared.namespace.confirmation_share(share),
            limits.per_consumer.max(1),
        );
        let key = shared.namespace.confirmation_slot(&crate::store::nonce());
        let ttl = limits.ttl.saturating_add(MARGIN);
        let store = &*shared.store;
        // Made before the claim is sent: a call dropped while it is in
        // flight still gives the place back.
        let mut slot = Slot {
            store: Some(Arc::clone(&shared.store)),
            key,
            lease,
            runtime,
        };
        match store.claim(&slot.key, &slot.lease, ttl).await {
            Ok(Claim::Leader) => Ok(Place::Held(slot)),
            Ok(_) => {
                // Nothing was claimed (a random key someone else holds
                // counts as full too): nothing to give back.
                slot.store = None;
                Ok(Place::Full)
            }
            Err(error) => {
                tracing::warn!(store = store.name(), %error, "the shared store failed: the confirmation was not requested");
                Err(ErrorPayload::store_unavailable())
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Some(store) = self.store.take() else {
            return;
        };
        let key = std::mem::take(&mut self.key);
        let lease = self.lease.clone();
        drop(self.runtime.spawn(async move {
            if let Err(error) = store.release(&key, &lease).await {
                tracing::warn!(store = store.name(), %error, "a confirmation's place in the shared store was not given back: it ends with its time to live");
            }
        }));
    }
}
