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
use agent_surface_passkeys::{OneTimeCodes, PasskeyError, Passkeys, PresenceMethods};
use serde_json::Value;

/// The relying party's name, shown by the browser's passkey prompt.
const RP_NAME: &str = "Devices console";

/// How long a passkey setup's code works.
const SETUP_TTL_MS: u64 = 5 * 60 * 1000;

/// A code for the terminal: print it where the person, not the page, can
/// read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalCode {
    /// What it is for: the request, as the dialog titles it, or the
    /// passkey setup.
    pub title: String,
    /// What the request applies to, one line each (nothing for a setup):
    /// the terminal's own account of the request, which no page script can
    /// change.
    pub items: Vec<String>,
    /// Its confirmation id (a setup's own id for a setup).
    pub confirmation_id: String,
    /// The code (`1234 5678`).
    pub code: String,
}

/// The console's proofs of presence: one per console, shared by its
/// registry (which verifies), its pages (which start ceremonies) and its
/// terminal (which shows the codes).
#[derive(Clone, Debug)]
pub struct Presence {
    passkeys: Arc<OnceLock<Passkeys>>,
    codes: OneTimeCodes,
    terminal: tokio::sync::broadcast::Sender<ApprovalCode>,
}

impl Presence {
    /// Fresh passkeys (set up when the console knows its port) and codes.
    pub fn new() -> Result<Presence, PasskeyError> {
        Ok(Presence {
            passkeys: Arc::new(OnceLock::new()),
            codes: OneTimeCodes::new("terminal")?,
            terminal: tokio::sync::broadcast::channel(64).0,
        })
    }

    /// The codes for the terminal, as they are issued.
    pub fn terminal(&self) -> tokio::sync::broadcast::Receiver<ApprovalCode> {
        self.terminal.subscribe()
    }

    /// Shows `code` in the terminal.
    pub(crate) fn announce(&self, code: ApprovalCode) {
        let _ = self.terminal.send(code);
    }

    /// Forgets the codes of requests no longer pending.
    pub(crate) fn retain_pending(&self, pending: &[Arc<str>]) {
        self.codes.retain_pending(pending);
    }

    /// Starts `person`'s passkey setup: its code goes to the terminal; the
    /// page keeps the returned challenge and asks the person to type it.
    pub(crate) fn begin_setup(
        &self,
        person: &str,
        now_ms: u64,
    ) -> Result<PresenceChallenge, PasskeyError> {
        let (challenge, code) = self
            .codes
            .issue_enrollment(person, now_ms.saturating_add(SETUP_TTL_MS))?;
        self.announce(ApprovalCode {
            title: format!("Set up a passkey for {person}"),
            items: Vec::new(),
            confirmation_id: challenge.confirmation_id.to_string(),
            code,
        });
        Ok(challenge)
    }

    /// With the setup code the person typed: the options of their passkey
    /// registration, or what to tell them.
    pub(crate) fn registration_options(
        &self,
        challenge: &PresenceChallenge,
        person: &str,
        typed: &str,
        now_ms: u64,
    ) -> Result<Value, String> {
        let Some(passkeys) = self.passkeys() else {
            return Err("Passkeys are not available on this console.".to_owned());
        };
        let enrolled = self
            .codes
            .confirm_enrollment(challenge, person, typed, now_ms)
            .map_err(|refusal| match refusal {
                PresenceRefusal::Expired => {
                    "That setup code expired: start the setup again.".to_owned()
                }
                PresenceRefusal::Exhausted => {
                    "Too many wrong setup codes: start the setup again.".to_owned()
                }
                _ => "That is not the setup code the terminal shows (three wrong tries end it)."
                    .to_owned(),
            })?;
        passkeys
            .start_registration(enrolled, person)
            .map_err(|e| format!("The passkey cannot be set up: {e}"))
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
        // The passkeys exist once the console serves: the methods of now.
        let methods = PresenceMethods::new().codes(self.codes.clone());
        let methods = match self.passkeys() {
            Some(passkeys) => methods.passkeys(passkeys.clone()),
            None => methods,
        };
        methods.verify(challenge, person, proof)
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
        PresenceRefusal::Exhausted => {
            "Too many wrong codes: this request's code no longer works. Use your passkey, or Deny."
        }
        _ => "Your proof could not be checked just now. Nothing was done.",
    }
}
