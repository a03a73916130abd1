//! Proof of presence: approvals that only the person can give.
//!
//! A click, a key press or a message on the page's websocket can be made by
//! a script in the page, a browser extension or a browser agent with input
//! the browser marks as trusted. None of them is proof that the person
//! approved. For the requests a host marks ([`PresenceRule`]: by default
//! every destructive or irreversible capability), an approval counts only
//! with a proof that leaves the page: a WebAuthn assertion with user
//! verification (a passkey, Touch ID, Windows Hello, a security key), or an
//! out-of-band code the page cannot read (printed in the terminal that
//! started the app, sent to another device).
//!
//! The registry does not know how a proof is checked: the host hands it a
//! [`PresenceVerifier`] (`agent-surface-passkeys` has WebAuthn and one-time
//! codes). The registry asks it, outside every lock and contained, and then
//! checks what it answers against the request itself: the proof must name
//! this request's confirmation id and digest and say the person was
//! verified, or the approval is refused and nothing is resolved. A plain
//! approval of such a request ([`Confirmations::resolve`](super::Confirmations::resolve)
//! with `approved`, [`Confirmations::approve`](super::Confirmations::approve),
//! an MCP elicitation answer) is refused with
//! [`ResolveError::PresenceRequired`](super::ResolveError::PresenceRequired):
//! never a silent downgrade to a click. Denying needs no proof: it can only
//! stop something.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use agent_surface_rules::Effect;

/// Which confirmation requests need proof that the person approved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PresenceRule {
    effects: Vec<Effect>,
    capabilities: Vec<Arc<str>>,
}

impl PresenceRule {
    /// No request needs proof (add effects or capabilities to it).
    pub fn none() -> PresenceRule {
        PresenceRule::default()
    }

    /// Every destructive capability (`destructive`) and every irreversible
    /// one (`external-side-effect`: mail sent, a card charged).
    pub fn destructive_or_irreversible() -> PresenceRule {
        PresenceRule::none()
            .effect(Effect::Destructive)
            .effect(Effect::ExternalSideEffect)
    }

    /// Also every request of a capability with `effect`.
    pub fn effect(mut self, effect: Effect) -> PresenceRule {
        if !self.effects.contains(&effect) {
            self.effects.push(effect);
        }
        self
    }

    /// Also every request of the capability `capability_id`
    /// (`view:devices.table.selectRows`, `domain:…`).
    pub fn capability(mut self, capability_id: &str) -> PresenceRule {
        if !self.capabilities.iter().any(|c| &**c == capability_id) {
            self.capabilities.push(Arc::from(capability_id));
        }
        self
    }

    /// Whether a request of `capability_id` with `effect` needs proof.
    pub fn applies(&self, capability_id: &str, effect: Effect) -> bool {
        self.effects.contains(&effect) || self.capabilities.iter().any(|c| &**c == capability_id)
    }
}

/// What a proof of presence must be bound to: one request, as the person
/// was shown it, until it expires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PresenceChallenge {
    /// The request's confirmation id (`cnf_…`).
    pub confirmation_id: Arc<str>,
    /// The hex SHA-256 of the exact request the person was shown.
    pub digest: Arc<str>,
    /// When the request expires (epoch milliseconds of the registry's
    /// clock): a proof is worth nothing after it.
    pub expires_at_ms: u64,
}

impl PresenceChallenge {
    /// 32 bytes that stand for this request and nothing else: the SHA-256 of
    /// a domain tag, the confirmation id, the digest and the expiry. A
    /// verifier that signs or types a challenge (a WebAuthn challenge, a
    /// one-time code derived from it) binds it to exactly this request.
    pub fn bytes(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(b"agent-surface presence v1\0");
        hash.update(self.confirmation_id.as_bytes());
        hash.update([0]);
        hash.update(self.digest.as_bytes());
        hash.update([0]);
        hash.update(self.expires_at_ms.to_be_bytes());
        hash.finalize().into()
    }
}

/// How the person proved they were there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PresenceMethod {
    /// A WebAuthn assertion with user verification: a passkey, a platform
    /// authenticator, a security key with a PIN or a fingerprint.
    Webauthn,
    /// A code the person carried from a channel the page cannot read (the
    /// terminal that started the app, another device).
    OutOfBand,
}

impl PresenceMethod {
    /// The wire string: `webauthn` or `out-of-band`.
    pub fn as_str(self) -> &'static str {
        match self {
            PresenceMethod::Webauthn => "webauthn",
            PresenceMethod::OutOfBand => "out-of-band",
        }
    }
}

/// What a [`PresenceVerifier`] found: who proved presence, for which
/// request. The registry checks it against the request before the approval
/// counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedPresence {
    /// How presence was proven.
    pub method: PresenceMethod,
    /// The credential that proved it (a WebAuthn credential id in
    /// base64url, a code's channel).
    pub credential_id: Arc<str>,
    /// Whether the person was verified (WebAuthn's UV flag; an out-of-band
    /// code typed by the person is verification of its own). A proof
    /// without it is refused.
    pub user_verified: bool,
    /// The confirmation id the proof is bound to.
    pub confirmation_id: Arc<str>,
    /// The request digest the proof is bound to.
    pub digest: Arc<str>,
}

/// How an approval was proven to come from the person, as recorded with
/// its [`Resolution`](super::Resolution) and in the audit trail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersonVerified {
    /// How presence was proven.
    pub method: PresenceMethod,
    /// The credential that proved it.
    pub credential_id: Arc<str>,
}

/// Why a proof of presence was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PresenceRefusal {
    /// The approving person has no credential of this kind registered (no
    /// passkey yet): register one first.
    NotRegistered,
    /// The proof says the person was not verified (a WebAuthn assertion
    /// without user verification).
    NotVerified,
    /// The proof is for another request (another id, another digest, or an
    /// older version of this one).
    OtherRequest,
    /// The proof was already used.
    Replayed,
    /// Too many wrong tries: this proof (a code) no longer works.
    Exhausted,
    /// The proof does not verify (a bad signature, another origin, another
    /// credential, a malformed answer, a wrong code).
    Invalid,
    /// The request has expired, or the proof's own time ran out.
    Expired,
    /// No verifier is configured, or it failed.
    Unavailable,
}

impl PresenceRefusal {
    /// A short machine string: `not-registered`, `not-verified`,
    /// `other-request`, `replayed`, `exhausted`, `invalid`, `expired`,
    /// `unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            PresenceRefusal::NotRegistered => "not-registered",
            PresenceRefusal::NotVerified => "not-verified",
            PresenceRefusal::OtherRequest => "other-request",
            PresenceRefusal::Replayed => "replayed",
            PresenceRefusal::Exhausted => "exhausted",
            PresenceRefusal::Invalid => "invalid",
            PresenceRefusal::Expired => "expired",
            PresenceRefusal::Unavailable => "unavailable",
        }
    }
}

impl std::fmt::Display for PresenceRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PresenceRefusal::NotRegistered => "the person has no registered credential to prove it",
            PresenceRefusal::NotVerified => "the proof does not say the person was verified",
            PresenceRefusal::OtherRequest => "the proof is for another request",
            PresenceRefusal::Replayed => "the proof was already used",
            PresenceRefusal::Exhausted => "too many wrong tries: the proof no longer works",
            PresenceRefusal::Invalid => "the proof does not verify",
            PresenceRefusal::Expired => "the request or the proof has expired",
            PresenceRefusal::Unavailable => "no proof of presence can be checked now",
        })
    }
}

impl std::error::Error for PresenceRefusal {}

/// Checks a proof that the person, not a script, approved a request. The
/// host supplies one with
/// [`RegistryBuilder::require_presence`](crate::registry::RegistryBuilder::require_presence).
///
/// `verify` runs outside every lock of the registry; a panic is contained
/// and refuses the approval. It must check that `proof` is bound to
/// `challenge` (the request's id, digest and expiry) and belongs to
/// `person` (the approver the channel named), and say which request it
/// verified: the registry compares that with the request again.
pub trait PresenceVerifier: Send + Sync + 'static {
    /// Verifies `proof` (as the person's page or device sent it) for
    /// `challenge`, on behalf of `person`.
    fn verify(
        &self,
        challenge: &PresenceChallenge,
        person: &str,
        proof: &Value,
    ) -> Result<VerifiedPresence, PresenceRefusal>;
}

/// A shared verifier (the host keeps a handle to start ceremonies).
impl<T: PresenceVerifier + ?Sized> PresenceVerifier for Arc<T> {
    fn verify(
        &self,
        challenge: &PresenceChallenge,
        person: &str,
        proof: &Value,
    ) -> Result<VerifiedPresence, PresenceRefusal> {
        (**self).verify(challenge, person, proof)
    }
}

/// A registry's presence requirement: which requests need proof, and who
/// checks it.
#[derive(Clone)]
pub(crate) struct PresenceRequirement {
    pub(crate) rule: PresenceRule,
    pub(crate) verifier: Arc<dyn PresenceVerifier>,
}

impl std::fmt::Debug for PresenceRequirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PresenceRequirement")
            .field("rule", &self.rule)
            .finish_non_exhaustive()
    }
}

impl PresenceRequirement {
    /// Asks the verifier, contained, and checks its answer against
    /// `challenge`: the same request, a verified person.
    pub(crate) fn check(
        &self,
        challenge: &PresenceChallenge,
        person: &str,
        proof: &Value,
        now_ms: u64,
    ) -> Result<PersonVerified, PresenceRefusal> {
        if now_ms >= challenge.expires_at_ms {
            return Err(PresenceRefusal::Expired);
        }
        let verified = crate::util::contain::contained("presence verifier", || {
            self.verifier.verify(challenge, person, proof)
        })
        .ok_or(PresenceRefusal::Unavailable)??;
        if verified.confirmation_id != challenge.confirmation_id
            || verified.digest != challenge.digest
        {
            return Err(PresenceRefusal::OtherRequest);
        }
        if !verified.user_verified {
            return Err(PresenceRefusal::NotVerified);
        }
        Ok(PersonVerified {
            method: verified.method,
            credential_id: verified.credential_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_rule_covers_destructive_and_irreversible_effects_only() {
        let rule = PresenceRule::destructive_or_irreversible();
        assert!(rule.applies("x", Effect::Destructive));
        assert!(rule.applies("x", Effect::ExternalSideEffect));
        assert!(!rule.applies("x", Effect::ServerMutation));
        let rule = PresenceRule::none().capability("view:a.b.c");
        assert!(rule.applies("view:a.b.c", Effect::LocalState));
        assert!(!rule.applies("view:a.b.d", Effect::Destructive));
    }

    #[test]
    fn a_challenge_stands_for_one_request() {
        let challenge = |id: &str, digest: &str, expires| PresenceChallenge {
            confirmation_id: Arc::from(id),
            digest: Arc::from(digest),
            expires_at_ms: expires,
        };
        let a = challenge("cnf_a", "d1", 5).bytes();
        assert_eq!(a, challenge("cnf_a", "d1", 5).bytes());
        for other in [
            challenge("cnf_b", "d1", 5),
            challenge("cnf_a", "d2", 5),
            challenge("cnf_a", "d1", 6),
            challenge("cnf_ad", "1", 5),
        ] {
            assert_ne!(a, other.bytes());
        }
    }
}
