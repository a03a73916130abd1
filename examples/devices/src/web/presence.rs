//! Proof that the person approves: the console's passkeys and one-time
//! codes, and what the dialog shows for a request that needs one.
//!
//! A click in the page is no proof of a person: a script in the page, an
//! extension or a browser agent can make the same events. So the console's
//! registry requires proof of presence for every destructive or
//! irreversible request ([`PresenceRule::destructive_or_irreversible`]):
//!
//! - a **passkey** (WebAuthn with user verification: Touch ID, Windows
//!   Hello, a security key with its PIN), registered once by the signed-in
//!   person; the browser's own prompt, which no page script can answer;
//! - or, on a machine without an authenticator, a **one-time code** bound
//!   to the request, printed in the terminal that started the console
//!   (which the page cannot read) and typed by the person.
//!
//! Passkeys need a domain as relying-party id: browsers refuse `127.0.0.1`,
//! so the console's links use `http://localhost:PORT` (a secure context).

use std::sync::{Arc, OnceLock};

use agent_surface::confirmation::{
    PresenceChallenge, PresenceRefusal, PresenceRule, PresenceVerifier, VerifiedPresence,
};
use agent_surface_passkeys::{OneTimeCodes, PasskeyError, Passkeys};
use serde_json::Value;

/// The relying party's name, shown by the browser's passkey prompt.
const RP_NAME: &str = "Devices console";

/// The console's proofs of presence: one per console, shared by its
/// registry (which verifies) and its pages (which start ceremonies).
#[derive(Clone, Debug)]
pub struct Presence {
    passkeys: Arc<OnceLock<Passkeys>>,
    codes: OneTimeCodes,
}

impl Presence {
    /// Fresh passkeys (set up when the console knows its port) and codes.
    pub fn new() -> Result<Presence, PasskeyError> {
        Ok(Presence {
            passkeys: Arc::new(OnceLock::new()),
            codes: OneTimeCodes::new("terminal")?,
        })
    }

    /// What needs proof: every destructive or irreversible request.
    pub fn rule() -> PresenceRule {
        PresenceRule::destructive_or_irreversible()
    }

    /// Sets up passkeys for the console at `http://localhost:{port}`.
    pub(crate) fn serve_on(&self, port: u16) -> Result<(), PasskeyError> {
        let passkeys = Passkeys::new("localhost", &format!("http://localhost:{port}"), RP_NAME)?;
        // A second console on the same presence keeps the first's passkeys.
        let _ = self.passkeys.set(passkeys);
        Ok(())
    }

    /// The passkeys, once the console serves.
    pub(crate) fn passkeys(&self) -> Option<&Passkeys> {
        self.passkeys.get()
    }

    /// The code for the request `challenge` stands for (`1234 5678`), to
    /// print where the page cannot read it.
    pub fn code_for(&self, challenge: &PresenceChallenge) -> String {
        self.codes.issue(challenge)
    }
}

impl PresenceVerifier for Presence {
    fn verify(
        &self,
        challenge: &PresenceChallenge,
        person: &str,
        proof: &Value,
    ) -> Result<VerifiedPresence, PresenceRefusal> {
        match proof.get("method").and_then(Value::as_str) {
            Some("webauthn") => match self.passkeys() {
                Some(passkeys) => passkeys.verify(challenge, person, proof),
                None => Err(PresenceRefusal::Unavailable),
            },
            Some("out-of-band") => self.codes.verify(challenge, person, proof),
            _ => Err(PresenceRefusal::Invalid),
        }
    }
}

/// What the person is told when a proof was refused.
pub(crate) fn refused_text(refusal: PresenceRefusal) -> &'static str {
    match refusal {
        PresenceRefusal::NotRegistered => {
            "You have no passkey on this console yet: set one up, or use the code from the terminal."
        }
        PresenceRefusal::NotVerified => {
            "Your authenticator did not verify you (no fingerprint, face or PIN). Nothing was done."
        }
        PresenceRefusal::OtherRequest => {
            "That proof was for another request. Nothing was done: try again."
        }
        PresenceRefusal::Replayed => "That proof was already used. Nothing was done: try again.",
        PresenceRefusal::Invalid => {
            "That did not prove it is you (a wrong code, or a passkey the console does not know). Nothing was done."
        }
        PresenceRefusal::Expired => "The request expired. Nothing was done.",
        _ => "Your proof could not be checked just now. Nothing was done.",
    }
}
