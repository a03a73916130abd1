//! Confirmations: the user approves the exact effective input of a call
//! before it runs. Use [`Confirmations`] (from `Registry::confirmations`) to
//! show pending requests in your UI and answer them.
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
//!
//! Only the person answers, through an approval channel the host trusts
//! (see [`ApprovalChannel`]): an answer names the request as it was shown ([`ShownRequest`]), and every
//! resolution records its channel and approver ([`Resolution`]). A request
//! whose registration goes away is withdrawn, never left to void silently.

mod approval_anywhere;
mod channel;
mod presence;
mod presentation;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
mod relay;
mod reservation;
mod services;
mod slot;
mod store;
mod summary;
mod wait;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use agent_surface_rules::Effect;

pub use channel::{
    ApprovalChannel, Approver, ChannelError, ChannelKind, HOST_CHANNEL, Resolution, ShownRequest,
};
pub(crate) use presence::PresenceRequirement;
pub use presence::{
    PersonVerified, PresenceChallenge, PresenceMethod, PresenceRefusal, PresenceRule,
    PresenceVerifier, VerifiedPresence,
};
pub(crate) use presentation::Presenter;
pub use presentation::{Presentation, PresentationRequest};
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use relay::VERDICT_WAIT;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub(crate) use relay::start as start_relay;
pub(crate) use reservation::Reservation;
pub(crate) use services::{ConfirmationLimits, ConfirmationServices};
pub(crate) use slot::{Place, Slot};
/// Why a request was withdrawn when its consumer was forgotten
/// ([`Registry::forget_consumer`](crate::Registry::forget_consumer): its
/// session ended): [`Resolution::reason`]. A call still waiting on such a
/// request ends without running again and leaves nothing its identity
/// could later replay or conflict with.
pub const AGENT_LEFT: &str = "agent-left";

pub(crate) use store::{Ask, Binding, ConfirmationStore, INPUT_CHANGED, StoreOwner};
pub(crate) use summary::{MAX_SUMMARY_CHARS, summary};
pub use wait::{WaitGuard, settle_now};

/// A request waiting for the user, as host UIs render it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PendingConfirmation {
    /// `cnf_…`.
    pub confirmation_id: Arc<str>,
    /// Hex SHA-256 of the canonical request (surface, registration,
    /// capability, consumer, effective input, effect): what an answer names
    /// with the id ([`shown`](Self::shown)).
    pub digest: Arc<str>,
    /// The capability to run.
    pub capability_id: Arc<str>,
    /// The registration that would run it.
    pub registration_id: Arc<str>,
    /// Who asked (`kind:id`).
    pub consumer_key: Arc<str>,
    /// Who asked, as a person would name them (the MCP client's name, the
    /// embedded agent's name), escaped; `None` if unknown.
    pub requester: Option<Arc<str>>,
    /// The request in the person's terms: title, the approving button's
    /// label, the effect in plain words (the host's presenter, or the
    /// description).
    pub presentation: Presentation,
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
    /// When it expires, in epoch milliseconds of the registry's clock (for
    /// a countdown: compare with [`Registry::now_ms`](crate::Registry::now_ms)).
    pub expires_at_ms: u64,
    /// Whether an approval needs proof that the person gave it (the
    /// registry's [`PresenceRule`] covers it): approve it with
    /// [`Confirmations::approve_with_presence`], never a plain click.
    pub presence_required: bool,
}

impl PendingConfirmation {
    /// The token of this request as shown: keep it with what you render
    /// and answer with it, so the answer can only resolve this request.
    pub fn shown(&self) -> ShownRequest {
        ShownRequest {
            confirmation_id: Arc::clone(&self.confirmation_id),
            digest: Arc::clone(&self.digest),
        }
    }

    /// What a proof of presence for this request must be bound to.
    pub fn presence_challenge(&self) -> PresenceChallenge {
        PresenceChallenge {
            confirmation_id: Arc::clone(&self.confirmation_id),
            digest: Arc::clone(&self.digest),
            expires_at_ms: self.expires_at_ms,
        }
    }

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
    /// Withdrawn before anyone answered: the component that would run it
    /// went away (a reload, another tab, an unmount), or the host withdrew it.
    Withdrawn,
}

impl ConfirmationOutcome {
    /// The wire string: `approved`, `denied`, `expired` or `withdrawn`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmationOutcome::Approved => "approved",
            ConfirmationOutcome::Denied => "denied",
            ConfirmationOutcome::Expired => "expired",
            ConfirmationOutcome::Withdrawn => "withdrawn",
        }
    }
}

/// Why [`Confirmations::resolve`] did nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolveError {
    /// No such confirmation.
    Unknown,
    /// It was already approved, denied, expired, withdrawn or consumed.
    NotPending,
    /// The answer names another request than this id's (the digest of what
    /// was shown differs): nothing was resolved.
    NotShown,
    /// This channel may not answer this request: an agent's own connection
    /// answering another consumer's request, or one offering a proof of
    /// presence (only an in-app channel carries the person's proof).
    NotPermitted,
    /// The request needs proof that the person approved it
    /// ([`PendingConfirmation::presence_required`]): a plain approval is
    /// refused. Approve with [`Confirmations::approve_with_presence`].
    PresenceRequired,
    /// The proof of presence was not accepted: nothing was resolved.
    PresenceRefused(PresenceRefusal),
    /// The request is held by another replica that did not answer (it or
    /// the shared store is down): nothing is known to be resolved.
    Unreachable,
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ResolveError::Unknown => "no such confirmation",
            ResolveError::NotPending => "the confirmation is no longer pending",
            ResolveError::NotShown => "the answer names a request other than the one pending",
            ResolveError::NotPermitted => "this approval channel may not answer this request",
            ResolveError::PresenceRequired => {
                "this request needs proof that the person approved it (a passkey or an \
                 out-of-band code), not a plain approval"
            }
            ResolveError::Unreachable => {
                "the replica holding this request did not answer; try again"
            }
            ResolveError::PresenceRefused(refusal) => {
                return write!(f, "the proof of presence was refused: {refusal}");
            }
        })
    }
}

impl std::error::Error for ResolveError {}

/// The confirmation controller of a registry: what host UIs use to show and
/// answer pending requests.
#[derive(Clone)]
pub struct Confirmations {
    services: Arc<dyn StoreOwner>,
}

impl std::fmt::Debug for Confirmations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confirmations").finish_non_exhaustive()
    }
}

/// Stops a confirmation listener when dropped.
#[must_use = "dropping it unsubscribes the listener"]
pub struct PendingSubscription {
    services: Arc<dyn StoreOwner>,
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
        self.services
            .confirmation_store()
            .listeners()
            .remove(self.id);
    }
}

impl Confirmations {
    /// The controller over a registry's confirmation services.
    pub(crate) fn new(services: Arc<dyn StoreOwner>) -> Confirmations {
        Confirmations { services }
    }

    fn store(&self) -> &ConfirmationStore {
        self.services.confirmation_store()
    }

    /// Requests waiting for the user, oldest first.
    pub fn pending(&self) -> Vec<PendingConfirmation> {
        self.store().pending()
    }

    /// The pending request `confirmation_id`, if it is pending.
    pub fn find(&self, confirmation_id: &str) -> Option<PendingConfirmation> {
        self.store().find(confirmation_id)
    }

    /// Answers `shown` through `approver`'s channel: approved or denied.
    /// Refused, with nothing resolved, when the request is no longer
    /// pending, when `shown` names another request than the pending one of
    /// its id, or when the channel may not answer it (an agent's own
    /// connection answering another consumer's request).
    pub fn resolve(
        &self,
        shown: &ShownRequest,
        approved: bool,
        approver: &Approver,
    ) -> Result<Resolution, ResolveError> {
        self.store()
            .resolve(&*self.services, shown, approved, approver)
    }

    /// Approves `shown` through `approver`'s in-app channel with `proof`
    /// that the person gave the approval (a WebAuthn assertion, an
    /// out-of-band code, as the registry's [`PresenceVerifier`] reads it).
    /// The verifier runs outside every lock, contained; its answer must
    /// name this request and a verified person, or the approval is refused
    /// ([`ResolveError::PresenceRefused`]) and nothing is resolved. The
    /// resolution records how presence was proven
    /// ([`Resolution::person_verified`]), as does the audit trail. Works
    /// for any request, whether or not it requires proof; refused
    /// ([`ResolveError::PresenceRefused`] with
    /// [`PresenceRefusal::Unavailable`]) when the registry has no verifier.
    pub fn approve_with_presence(
        &self,
        shown: &ShownRequest,
        approver: &Approver,
        proof: &Value,
    ) -> Result<Resolution, ResolveError> {
        self.store()
            .approve_with_presence(&*self.services, shown, approver, proof)
    }

    /// What a proof of presence for `shown` must be bound to, while it is
    /// pending and `shown` names it as it is.
    pub fn presence_challenge(
        &self,
        shown: &ShownRequest,
    ) -> Result<PresenceChallenge, ResolveError> {
        let pending = self
            .find(&shown.confirmation_id)
            .ok_or(ResolveError::NotPending)?;
        if pending.digest != shown.digest {
            return Err(ResolveError::NotShown);
        }
        Ok(pending.presence_challenge())
    }

    /// Approves `shown` through the [`HOST_CHANNEL`] (host code answering
    /// for the person, e.g. a terminal prompt it showed).
    pub fn approve(&self, shown: &ShownRequest) -> Result<Resolution, ResolveError> {
        self.resolve(shown, true, &self.host_approver())
    }

    /// Denies `shown` through the [`HOST_CHANNEL`].
    pub fn deny(&self, shown: &ShownRequest) -> Result<Resolution, ResolveError> {
        self.resolve(shown, false, &self.host_approver())
    }

    fn host_approver(&self) -> Approver {
        Approver {
            channel: Arc::from(HOST_CHANNEL),
            kind: ChannelKind::InApp,
            approver: Arc::from(HOST_CHANNEL),
            connection: None,
        }
    }

    /// An approver answering through the in-app channel `channel` that the
    /// registry declares
    /// ([`RegistryBuilder::approval_channel`](crate::registry::RegistryBuilder::approval_channel);
    /// [`HOST_CHANNEL`] always exists), on behalf of `person` (the signed-in
    /// user, recorded with every answer).
    pub fn approver(&self, channel: &str, person: &str) -> Result<Approver, ChannelError> {
        let declared = channel == HOST_CHANNEL
            || self
                .services
                .approval_channels()
                .iter()
                .any(|c| c.name() == channel && c.kind() == ChannelKind::InApp);
        if !declared {
            return Err(ChannelError::Undeclared(channel.to_owned()));
        }
        Ok(Approver {
            channel: Arc::from(channel),
            kind: ChannelKind::InApp,
            approver: Arc::from(person),
            connection: None,
        })
    }

    /// An approver for an agent's own connection that its client shows to
    /// a person (MCP elicitation in a desktop client): it answers only the
    /// requests of `consumer` — the connection's own — and is recorded as
    /// channel `channel` of kind [`ChannelKind::AgentConnection`], approver
    /// `client` (the client's name). For adapters the host opted in; the
    /// trust assumption is the client's (that it asks its person).
    pub fn connection_approver(
        &self,
        channel: &str,
        consumer: &crate::context::Consumer,
        client: &str,
    ) -> Approver {
        Approver {
            channel: Arc::from(channel),
            kind: ChannelKind::AgentConnection,
            approver: Arc::from(client),
            connection: Some(Arc::clone(consumer.key())),
        }
    }

    /// Whether the registry declares an in-app approval channel of its own
    /// (a page or dialog the person uses). Adapters turn their own approval
    /// routes (MCP elicitation) off by default when it does.
    pub fn has_in_app_channel(&self) -> bool {
        self.services
            .approval_channels()
            .iter()
            .any(|c| c.kind() == ChannelKind::InApp)
    }

    /// How `confirmation_id` was resolved (approved, denied, expired or
    /// withdrawn), with its channel and approver; `None` while it is
    /// pending or once it is forgotten.
    pub fn resolution(&self, confirmation_id: &str) -> Option<Resolution> {
        self.store().resolution(&*self.services, confirmation_id)
    }

    /// Withdraws every open request of `registration_id` (the registry does
    /// this itself when a registration is unmounted or replaced): they leave
    /// the pending list, waiting calls settle, and the agent's retry is told
    /// `CONFIRMATION_INVALID {reason: "withdrawn"}`. Returns how many.
    pub fn withdraw_registration(&self, registration_id: &str, reason: &'static str) -> usize {
        self.store()
            .withdraw_registration(&*self.services, registration_id, reason)
    }

    /// Withdraws the open request `confirmation_id` of `consumer` because
    /// the call waiting on it was cancelled (an adapter's wait mode, an MCP
    /// elicitation the client gave up on): the person is no longer asked
    /// for something nobody waits for. Reason `cancelled`; only the
    /// consumer's own request; a request another call still waits on
    /// ([`wait_for`](Self::wait_for)) is left for it
    /// ([`Withdrawal::Awaited`]), and one a running call holds is left to
    /// that call. Call it after the cancelled call's own wait has ended.
    pub fn withdraw_cancelled(
        &self,
        confirmation_id: &str,
        consumer: &crate::context::Consumer,
    ) -> Withdrawal {
        self.store()
            .withdraw_cancelled(&*self.services, confirmation_id, consumer.key())
    }

    /// Waits until the confirmation is approved, denied, expired or
    /// withdrawn (`None`
    /// for an unknown id). Cancel by dropping the future.
    pub async fn wait_for(&self, confirmation_id: &str) -> Option<ConfirmationOutcome> {
        let store = self.store();
        let Some(mut watcher) = store.watcher(confirmation_id) else {
            return store
                .resolution(&*self.services, confirmation_id)
                .map(|resolution| resolution.outcome);
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
        let id = self.store().listeners().add(listener);
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

/// What [`Confirmations::withdraw_cancelled`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withdrawal {
    /// Withdrawn (reason `cancelled`): settle the cancelled call.
    Withdrawn,
    /// Another call still waits on it: left open for that call, and the
    /// cancelled one settles on its own (its shared attempt runs on).
    Awaited,
    /// Not open (already answered, expired, withdrawn, or not this
    /// consumer's): settle the cancelled call.
    NotOpen,
}
