//! `PresenceMethods`: one verifier that serves passkeys and one-time codes,
//! by the proof's `method`.

use agent_surface::confirmation::{
    PresenceChallenge, PresenceRefusal, PresenceVerifier, VerifiedPresence,
};
use serde_json::Value;

use crate::{OneTimeCodes, Passkeys};

/// The verifier a registry is given: a proof's `method` (`webauthn` or
/// `out-of-band`) picks the verifier; a method not configured, or a proof
/// without one, is refused (`invalid`).
#[derive(Clone, Debug, Default)]
pub struct PresenceMethods {
    passkeys: Option<Passkeys>,
    codes: Option<OneTimeCodes>,
}

impl PresenceMethods {
    /// No method yet: add [`passkeys`](Self::passkeys) and/or
    /// [`codes`](Self::codes).
    pub fn new() -> PresenceMethods {
        PresenceMethods::default()
    }

    /// Accepts WebAuthn assertions checked by `passkeys` (a handle: keep a
    /// clone to register passkeys and start approvals).
    pub fn passkeys(mut self, passkeys: Passkeys) -> PresenceMethods {
        self.passkeys = Some(passkeys);
        self
    }

    /// Accepts out-of-band codes issued by `codes`.
    pub fn codes(mut self, codes: OneTimeCodes) -> PresenceMethods {
        self.codes = Some(codes);
        self
    }
}

impl PresenceVerifier for PresenceMethods {
    fn verify(
        &self,
        challenge: &PresenceChallenge,
        person: &str,
        proof: &Value,
    ) -> Result<VerifiedPresence, PresenceRefusal> {
        match proof.get("method").and_then(Value::as_str) {
            Some("webauthn") => match &self.passkeys {
                Some(passkeys) => passkeys.verify(challenge, person, proof),
                None => Err(PresenceRefusal::Invalid),
            },
            Some("out-of-band") => match &self.codes {
                Some(codes) => codes.verify(challenge, person, proof),
                None => Err(PresenceRefusal::Invalid),
            },
            _ => Err(PresenceRefusal::Invalid),
        }
    }
}
