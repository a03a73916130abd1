//! Forgetting one consumer's open confirmations: when an adapter's session
//! ends, nobody can present its evidence any more, so its pending and
//! approved records expire at once (a record reserved by a running call
//! waits for that call, which consumes or releases it).

use std::sync::Arc;

use super::{ConfirmationStore, Stage};
use crate::confirmation::services::ConfirmationServices;

impl ConfirmationStore {
    /// Expires every pending or approved record of `consumer_key`.
    pub(crate) fn expire_consumer<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        consumer_key: &str,
    ) {
        // The clock may be host code: read before the store's lock.
        let now = services.clock_ms();
        let mut store = self.lock();
        let ids: Vec<Arc<str>> = store
            .open
            .iter()
            .filter(|(_, record)| {
                *record.view.consumer_key == *consumer_key
                    && !matches!(record.stage, Stage::Reserved { .. })
            })
            .map(|(id, _)| Arc::clone(id))
            .collect();
        if ids.is_empty() {
            return;
        }
        let mut expired = Vec::with_capacity(ids.len());
        for id in ids {
            expired.extend(Self::expire_locked(&mut store, services, &id, now));
        }
        drop(store);
        for expired in expired {
            Self::announce_expired(services, expired);
        }
        self.notify();
    }
}
