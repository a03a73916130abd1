//! Confirmations: the user approves the exact effective input of a call
//! before it runs.
//!
//! A pending record binds to the canonical digest of `{surfaceId,
//! registrationId, capabilityId, consumerKey, effectiveInput, effect}` and
//! keeps the canonical text itself: a retry must reproduce both, or it fails
//! `CONFIRMATION_INVALID {reason: "mismatch"}`. Evidence is single use, expires
//! after `confirmation_ttl`, and cannot cross consumers, registrations,
//! capabilities or registries. At most `max_pending_confirmations` are
//! pending, and at most `max_pending_confirmations_per_consumer` of one
//! consumer; beyond that a request fails `RATE_LIMITED` and creates
//! nothing. Approved evidence is reserved by the call that presents it and
//! consumed only when that call executes: a call refused before (queue
//! full, precondition, cancellation) leaves the approval usable.
//!
//! Everything shown to the human (the summary) has its control, format,
//! bidi and zero-width characters escaped.

mod reservation;
mod services;
mod store;
mod summary;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::Effect;

pub(crate) use reservation::Reservation;
pub(crate) use services::{ConfirmationLimits, ConfirmationServices};
pub(crate) use store::{Binding, ConfirmationStore};
pub(crate) use summary::{MAX_SUMMARY_CHARS, summary};

/// A request waiting for the user, as host UIs render it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingConfirmation {
    /// `cnf_…`.
    pub confirmation_id: Arc<str>,
    /// The capability to run.
    pub capability_id: Arc<str>,
    /// The registration that would run it.
    pub registration_id: Arc<str>,
    /// Who asked (`kind:id`).
    pub consumer_key: Arc<str>,
    /// The effect of the operation being approved.
    pub effect: Effect,
    /// Who demands the approval: `"client"` (the capability's posture or a
    /// policy) or `"server"` (the backend of a domain procedure).
    pub origin: &'static str,
    /// Human-readable: the description plus the effective input, bound
    /// values first, at most 300 characters, with control, format, bidi and
    /// zero-width characters written as visible `\u{…}` escapes.
    pub summary: String,
    /// The exact effective input (bound + agent-supplied) being approved,
    /// as data: show a human [`display_input`](Self::display_input).
    pub input: Value,
    /// When it was requested (RFC 3339).
    pub requested_at: String,
    /// When it expires (RFC 3339).
    pub expires_at: String,
}

impl PendingConfirmation {
    /// The exact input as canonical JSON text for a human, its control,
    /// format, bidi and zero-width characters written as visible `\u{…}`
    /// escapes (never cut: the human approves all of it).
    pub fn display_input(&self) -> String {
        let text = crate::canonical::canonical_json(&self.input);
        crate::util::display_text::escape(&text).into_owned()
    }
}

/// How a confirmation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmationOutcome {
    /// The user approved.
    Approved,
    /// The user denied.
    Denied,
    /// Nobody answered in time.
    Expired,
}

impl ConfirmationOutcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ConfirmationOutcome::Approved => "approved",
            ConfirmationOutcome::Denied => "denied",
            ConfirmationOutcome::Expired => "expired",
        }
    }
}

/// Why [`Confirmations::resolve`] did nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolveError {
    /// No such confirmation.
    Unknown,
    /// It was already approved, denied, expired or consumed.
    NotPending,
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ResolveError::Unknown => "no such confirmation",
            ResolveError::NotPending => "the confirmation is no longer pending",
        })
    }
}

impl std::error::Error for ResolveError {}

/// The confirmation controller of a registry: what host UIs use to show and
/// answer pending requests.
#[derive(Clone)]
pub struct Confirmations {
    services: Arc<dyn ConfirmationServices>,
}

impl std::fmt::Debug for Confirmations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confirmations").finish_non_exhaustive()
    }
}

/// Stops a confirmation listener when dropped.
#[must_use = "dropping it unsubscribes the listener"]
pub struct PendingSubscription {
    services: Arc<dyn ConfirmationServices>,
    id: u64,
}

impl std::fmt::Debug for PendingSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingSubscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for PendingSubscription {
    fn drop(&mut self) {
        self.services.confirmation_store().listeners.remove(self.id);
    }
}

impl Confirmations {
    /// The controller over a registry's confirmation services.
    pub(crate) fn new(services: Arc<dyn ConfirmationServices>) -> Confirmations {
        Confirmations { services }
    }

    fn store(&self) -> &ConfirmationStore {
        self.services.confirmation_store()
    }

    /// Requests waiting for the user, oldest first.
    pub fn pending(&self) -> Vec<PendingConfirmation> {
        self.store().pending()
    }

    /// Approves or denies a pending request.
    pub fn resolve(&self, confirmation_id: &str, approved: bool) -> Result<(), ResolveError> {
        self.store()
            .resolve(&*self.services, confirmation_id, approved)
    }

    /// Approves a pending request.
    pub fn approve(&self, confirmation_id: &str) -> Result<(), ResolveError> {
        self.resolve(confirmation_id, true)
    }

    /// Denies a pending request.
    pub fn deny(&self, confirmation_id: &str) -> Result<(), ResolveError> {
        self.resolve(confirmation_id, false)
    }

    /// Waits until the confirmation is approved, denied or expired (`None`
    /// for an unknown id). Cancel by dropping the future.
    pub async fn wait_for(&self, confirmation_id: &str) -> Option<ConfirmationOutcome> {
        let store = self.store();
        let Some(mut watcher) = store.watcher(confirmation_id) else {
            return store.ended_outcome(&*self.services, confirmation_id);
        };
        match watcher.wait_for(Option::is_some).await {
            Ok(outcome) => *outcome,
            Err(_) => Some(ConfirmationOutcome::Expired),
        }
    }

    /// Calls `listener` with the pending list whenever it changes.
    pub fn subscribe(
        &self,
        listener: impl Fn(&[PendingConfirmation]) + Send + Sync + 'static,
    ) -> PendingSubscription {
        let id = self.store().listeners.add(listener);
        PendingSubscription {
            services: Arc::clone(&self.services),
            id,
        }
    }

    /// Expires every request whose time is up now (timers do this on their
    /// own; useful with a manual clock).
    pub fn expire_due(&self) {
        self.store().expire_due(&*self.services);
    }

    /// The time to live of new requests.
    pub fn ttl(&self) -> Duration {
        self.services.confirmation_limits().ttl
    }
}
