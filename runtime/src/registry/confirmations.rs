//! The registry as its confirmation store's services (clock, ids, audit,
//! dispatcher, limits), and the confirmation controller hosts use.

use std::sync::Arc;

use super::{Registry, Services};
use crate::audit::AuditEvent;
use crate::confirmation::{
    ApprovalChannel, ConfirmationLimits, ConfirmationServices, ConfirmationStore, Confirmations,
    PresenceRequirement, StoreOwner,
};
use crate::events::SurfaceEvent;

impl StoreOwner for Services {
    fn confirmation_store(&self) -> &ConfirmationStore {
        &self.confirmations
    }
}

impl ConfirmationServices for Services {
    fn clock_ms(&self) -> u64 {
        self.now_ms()
    }

    fn confirmation_limits(&self) -> ConfirmationLimits {
        let limits = &self.config.limits;
        ConfirmationLimits {
            ttl: limits.confirmation_ttl,
            max_pending: limits.max_pending_confirmations,
            per_consumer: limits.max_pending_confirmations_per_consumer,
            ended_ttl: limits.dedupe_cache_ttl,
        }
    }

    fn mint_confirmation_id(&self) -> String {
        self.ids.confirmation_id()
    }

    fn audit(&self, event: &AuditEvent) {
        self.record(event);
    }

    fn emit(&self, event: SurfaceEvent) {
        self.dispatcher.emit([event]);
    }

    fn disposed(&self) -> bool {
        self.disposed.is_cancelled()
    }

    fn approval_channels(&self) -> &[ApprovalChannel] {
        &self.config.approval_channels
    }

    fn presence(&self) -> Option<&PresenceRequirement> {
        self.config.presence.as_ref()
    }

    fn shared(&self) -> Option<&crate::store::Attached> {
        // A page is one replica of nothing: its confirmations never go
        // through a store (and its build carries none of that code).
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        return None;
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        self.config.shared.as_ref()
    }
}

impl Registry {
    /// A registration left the surface (`unmounted` or `replaced`): its
    /// in-flight calls are aborted, the unmount is audited, and its open
    /// confirmations are withdrawn.
    pub(super) fn retired(
        &self,
        registration: &super::Registration,
        now: u64,
        reason: &'static str,
    ) {
        registration.abort();
        self.audit_registration(
            crate::audit::AuditKind::Unregistration,
            &registration.id,
            now,
            None,
        );
        self.inner
            .confirmations
            .withdraw_registration(&*self.inner, &registration.id, reason);
    }

    /// The confirmation controller.
    pub fn confirmations(&self) -> Confirmations {
        Confirmations::new(Arc::clone(&self.inner) as Arc<dyn StoreOwner>)
    }
}
