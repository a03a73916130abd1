//! A claim held in the shared store by a value of this process: given back
//! when the value is dropped, or kept until its time to live. What a
//! confirmation's place in its principal's share and an approval's single
//! use across replicas are made of.

use std::sync::Arc;
use std::time::Duration;

use super::{Claim, Lease, SharedStore, StoreError};

/// A key this process claimed in the shared store; dropped, it gives the
/// key back (on the runtime it was claimed on: it may be dropped on a host
/// thread outside any runtime).
pub(crate) struct Held {
    /// `None` once nothing is left to give back.
    store: Option<Arc<dyn SharedStore>>,
    key: String,
    lease: Lease,
    runtime: Option<tokio::runtime::Handle>,
}

impl Held {
    /// Claims `key` for `lease` (held for `ttl` unless given back): the
    /// held claim, or what the store found instead (nothing is held).
    pub(crate) async fn claim(
        store: &Arc<dyn SharedStore>,
        key: String,
        lease: Lease,
        ttl: Duration,
    ) -> Result<Result<Held, Claim>, StoreError> {
        // Made before the claim is sent: a future dropped while it is in
        // flight still gives the key back.
        let mut held = Held {
            store: Some(Arc::clone(store)),
            key,
            lease,
            runtime: tokio::runtime::Handle::try_current().ok(),
        };
        match store.claim(&held.key, &held.lease, ttl).await {
            Ok(Claim::Leader) => Ok(Ok(held)),
            Ok(other) => {
                held.store = None;
                Ok(Err(other))
            }
            Err(error) => Err(error),
        }
    }

    /// Keeps the claim until its time to live: nothing is given back.
    pub(crate) fn keep(mut self) {
        self.store = None;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(store) = self.store.take() else {
            return;
        };
        let key = std::mem::take(&mut self.key);
        let lease = self.lease.clone();
        let release = async move {
            if let Err(error) = store.release(&key, &lease).await {
                tracing::warn!(store = store.name(), %error, "a claim in the shared store was not given back: it ends with its time to live");
            }
        };
        match &self.runtime {
            Some(runtime) => drop(runtime.spawn(release)),
            None => {
                let _ = crate::util::time::spawn(release);
            }
        }
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}
