//! The narrow services a confirmation store needs from the registry it
//! belongs to: the clock, fresh ids, the audit trail, the event dispatcher,
//! its limits, and whether the registry is going away. The registry
//! implements them; the store never reaches into the registry itself (and
//! these services never name the store: the store's own
//! [`StoreOwner`](super::StoreOwner) adds the way back to it).

use std::time::Duration;

use super::{ApprovalChannel, PresenceRequirement};
use crate::audit::AuditEvent;
use crate::events::SurfaceEvent;

/// The limits a confirmation store works within.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConfirmationLimits {
    /// How long a request stays open (`confirmation_ttl`).
    pub(crate) ttl: Duration,
    /// Most open requests of the registry (`max_pending_confirmations`).
    pub(crate) max_pending: usize,
    /// Most open requests of one consumer.
    pub(crate) per_consumer: usize,
    /// How long an ended record is remembered to explain a retry.
    pub(crate) ended_ttl: Duration,
}

/// What a confirmation store uses of the registry it belongs to.
pub(crate) trait ConfirmationServices: Send + Sync + 'static {
    /// Now, in epoch milliseconds (the registry's clock).
    fn clock_ms(&self) -> u64;
    /// The limits in effect.
    fn confirmation_limits(&self) -> ConfirmationLimits;
    /// A fresh confirmation id (`cnf_…`).
    fn mint_confirmation_id(&self) -> String;
    /// Writes an audit record.
    fn audit(&self, event: &AuditEvent);
    /// Delivers a surface event to the registry's listeners.
    fn emit(&self, event: SurfaceEvent);
    /// Whether the registry was disposed.
    fn disposed(&self) -> bool;
    /// The approval channels the registry declares.
    fn approval_channels(&self) -> &[ApprovalChannel];
    /// Which requests need proof of presence, and who checks it.
    fn presence(&self) -> Option<&PresenceRequirement>;
    /// The shared store of the registry's replicas, if it has one (the
    /// relay's; a page has none).
    #[cfg_attr(all(target_arch = "wasm32", target_os = "unknown"), allow(dead_code))]
    fn shared(&self) -> Option<&crate::store::Attached>;
}
