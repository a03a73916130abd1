//! Forgetting one consumer's open confirmations: when an adapter's session
//! ends, nobody can present its evidence any more, so its pending and
//! approved records expire at once (a record reserved by a running call
//! waits for that call, which consumes or releases it).

use std::sync::Arc;

use super::{ConfirmationStore, Stage};
use crate::audit::AuditKind;
use crate::confirmation::ConfirmationOutcome;
use crate::events::SurfaceEvent;
use crate::registry::Registry;

impl ConfirmationStore {
    /// Expires every pending or approved record of `consumer_key`.
    pub(crate) fn expire_consumer(&self, registry: &Registry, consumer_key: &str) {
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
            let Some((id, record)) = store.open.remove_entry(&id) else {
                continue;
            };
            let was_pending = record.stage == Stage::Pending;
            let view = record.view.clone();
            record
                .resolved
                .send_replace(Some(ConfirmationOutcome::Expired));
            Self::end(&mut store, registry, &id, record, Stage::Expired);
            expired.push((view, was_pending));
        }
        drop(store);
        for (view, was_pending) in expired {
            Self::audit(registry, AuditKind::ConfirmationExpired, &view);
            if was_pending {
                registry
                    .inner
                    .dispatcher
                    .emit([SurfaceEvent::ConfirmationResolved {
                        confirmation_id: Arc::clone(&view.confirmation_id),
                        outcome: ConfirmationOutcome::Expired.as_str(),
                    }]);
            }
        }
        self.notify(registry);
    }
}
