//! `Passkeys`: WebAuthn with user verification, one assertion per request.
//!
//! The relying party's checks are `webauthn-rs`'s: the origin and the RP id,
//! the signature over the authenticator data and the client data, the
//! challenge, the user-verification flag (passkeys always require it), the
//! signature counter. What this adds is the binding to agent-surface's
//! requests: an approval ceremony is started for one request
//! ([`Passkeys::start_approval`]) and kept with its confirmation id, digest
//! and person; the assertion that answers it verifies only against that
//! ceremony, once. A ceremony for another request, a second use of an
//! assertion, a credential of another person, an assertion without user
//! verification: each is refused.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use agent_surface::confirmation::{
    PresenceChallenge, PresenceMethod, PresenceRefusal, PresenceVerifier, VerifiedPresence,
};
use serde_json::Value;
use webauthn_rs::prelude::{
    CredentialID, Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Url, Uuid, Webauthn, WebauthnBuilder, WebauthnError,
};

use crate::{Enrolled, PasskeyError};

/// People with passkeys, at most; registering beyond that is refused
/// (nobody's passkey is ever dropped to make room).
pub const MAX_PEOPLE: usize = 1024;
/// Passkeys of one person, at most.
pub const MAX_PASSKEYS_PER_PERSON: usize = 8;
/// Approval ceremonies in progress, at most; starting one beyond that ends
/// the oldest (its assertion is then refused: the person asks again).
pub const MAX_CEREMONIES: usize = 64;
/// Registrations in progress, at most (the oldest ends first).
const MAX_REGISTRATIONS: usize = 64;

struct Person {
    user_id: Uuid,
    keys: Vec<Passkey>,
}

struct Ceremony {
    confirmation_id: Arc<str>,
    digest: Arc<str>,
    person: Arc<str>,
    state: PasskeyAuthentication,
}

#[derive(Default)]
struct State {
    people: HashMap<Arc<str>, Person>,
    registrations: VecDeque<(Arc<str>, PasskeyRegistration)>,
    ceremonies: VecDeque<Ceremony>,
}

struct Inner {
    webauthn: Webauthn,
    state: Mutex<State>,
}

/// The passkeys of an application's people, and the approval ceremonies in
/// progress. A handle: clones share everything (give one to the registry
/// through [`PresenceMethods`](crate::PresenceMethods), keep one to
/// register passkeys and start approvals).
#[derive(Clone)]
pub struct Passkeys {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Passkeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passkeys").finish_non_exhaustive()
    }
}

/// A credential id as base64url (its serde form).
fn encoded(id: &CredentialID) -> String {
    match serde_json::to_value(id) {
        Ok(Value::String(text)) => text,
        _ => String::new(),
    }
}

/// Why a ceremony's answer was refused, in agent-surface's terms.
fn refusal(error: &WebauthnError) -> PresenceRefusal {
    match error {
        WebauthnError::MismatchedChallenge => PresenceRefusal::OtherRequest,
        WebauthnError::UserNotVerified => PresenceRefusal::NotVerified,
        _ => PresenceRefusal::Invalid,
    }
}

impl Passkeys {
    /// Passkeys for the relying party `rp_id` (a domain: the page's host or
    /// a parent of it) serving the page at `origin` (scheme, host and
    /// port, as the browser sends it), shown to the person as `rp_name`.
    ///
    /// WebAuthn needs a secure context and a domain: `https://…`, or
    /// `http://localhost:PORT` with RP id `localhost` on one machine.
    /// Browsers refuse an IP address (`127.0.0.1`) as RP id, so a local app
    /// must be opened as `localhost`.
    pub fn new(rp_id: &str, origin: &str, rp_name: &str) -> Result<Passkeys, PasskeyError> {
        let url = Url::parse(origin)
            .map_err(|e| PasskeyError::Configuration(format!("origin `{origin}`: {e}")))?;
        let webauthn = WebauthnBuilder::new(rp_id, &url)
            .map_err(|_| {
                PasskeyError::Configuration(format!(
                    "`{rp_id}` is not the host of `{origin}` or a parent domain of it"
                ))
            })?
            .rp_name(rp_name)
            .build()
            .map_err(|e| PasskeyError::Configuration(e.to_string()))?;
        Ok(Passkeys {
            inner: Arc::new(Inner {
                webauthn,
                state: Mutex::new(State::default()),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How many passkeys `person` has registered.
    pub fn registered(&self, person: &str) -> usize {
        self.lock().people.get(person).map_or(0, |p| p.keys.len())
    }

    /// Starts registering a passkey for the person `enrolled` names — who
    /// proved the setup with a code from outside the page
    /// ([`OneTimeCodes::issue_enrollment`](crate::OneTimeCodes::issue_enrollment)),
    /// so no script in the page can enroll a key of its own — shown to the
    /// authenticator as `display_name`: the options to hand the browser's
    /// `navigator.credentials.create` (as `publicKey`, binary fields in
    /// base64url). A newer start for the same person replaces this one.
    pub fn start_registration(
        &self,
        enrolled: Enrolled,
        display_name: &str,
    ) -> Result<Value, PasskeyError> {
        let person = enrolled.person();
        let (user_id, exclude) = {
            let state = self.lock();
            match state.people.get(person) {
                Some(p) if p.keys.len() >= MAX_PASSKEYS_PER_PERSON => {
                    return Err(PasskeyError::Full);
                }
                Some(p) => (
                    p.user_id,
                    Some(p.keys.iter().map(|k| k.cred_id().clone()).collect()),
                ),
                None if state.people.len() >= MAX_PEOPLE => return Err(PasskeyError::Full),
                None => (Uuid::new_v4(), None),
            }
        };
        let (options, registration) = self
            .inner
            .webauthn
            .start_passkey_registration(user_id, person, display_name, exclude)
            .map_err(|e| PasskeyError::Rejected(e.to_string()))?;
        let options =
            serde_json::to_value(options).map_err(|e| PasskeyError::Rejected(e.to_string()))?;
        let mut state = self.lock();
        state.registrations.retain(|(p, _)| &**p != person);
        if state.registrations.len() >= MAX_REGISTRATIONS {
            state.registrations.pop_front();
        }
        state
            .registrations
            .push_back((Arc::from(person), registration));
        // The person's user id is kept with the registration's start: a
        // second start reuses it.
        state.people.entry(Arc::from(person)).or_insert(Person {
            user_id,
            keys: Vec::new(),
        });
        Ok(options)
    }

    /// Finishes `person`'s registration with the browser's answer
    /// (`credential`: the `PublicKeyCredential` of
    /// `navigator.credentials.create`, binary fields in base64url). Returns
    /// the new passkey's credential id (base64url).
    pub fn finish_registration(
        &self,
        person: &str,
        credential: &Value,
    ) -> Result<String, PasskeyError> {
        if crate::too_large(credential) {
            return Err(PasskeyError::Rejected("the answer is too large".into()));
        }
        let registration = {
            let mut state = self.lock();
            let at = state
                .registrations
                .iter()
                .position(|(p, _)| &**p == person)
                .ok_or(PasskeyError::NoRegistration)?;
            state
                .registrations
                .remove(at)
                .map(|(_, r)| r)
                .ok_or(PasskeyError::NoRegistration)?
        };
        let answer: RegisterPublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|e| PasskeyError::Rejected(e.to_string()))?;
        let passkey = self
            .inner
            .webauthn
            .finish_passkey_registration(&answer, &registration)
            .map_err(|e| PasskeyError::Rejected(e.to_string()))?;
        let id = encoded(passkey.cred_id());
        let mut state = self.lock();
        let taken = state
            .people
            .values()
            .any(|p| p.keys.iter().any(|k| k.cred_id() == passkey.cred_id()));
        if taken {
            return Err(PasskeyError::AlreadyRegistered);
        }
        let full = state.people.len() >= MAX_PEOPLE && !state.people.contains_key(person);
        if full {
            return Err(PasskeyError::Full);
        }
        let entry = state.people.entry(Arc::from(person)).or_insert(Person {
            user_id: Uuid::new_v4(),
            keys: Vec::new(),
        });
        if entry.keys.len() >= MAX_PASSKEYS_PER_PERSON {
            return Err(PasskeyError::Full);
        }
        entry.keys.push(passkey);
        Ok(id)
    }

    /// Starts `person`'s approval of the request `challenge` stands for:
    /// the options to hand `navigator.credentials.get` (as `publicKey`).
    /// The assertion that answers them approves this request only, once,
    /// and only for `person`. A newer start for the same request replaces
    /// this one. Refused with [`PresenceRefusal::NotRegistered`] when the
    /// person has no passkey.
    pub fn start_approval(
        &self,
        person: &str,
        challenge: &PresenceChallenge,
    ) -> Result<Value, PresenceRefusal> {
        let keys = self
            .lock()
            .people
            .get(person)
            .map(|p| p.keys.clone())
            .unwrap_or_default();
        if keys.is_empty() {
            return Err(PresenceRefusal::NotRegistered);
        }
        let (options, state) = self
            .inner
            .webauthn
            .start_passkey_authentication(&keys)
            .map_err(|e| refusal(&e))?;
        let options = serde_json::to_value(options).map_err(|_| PresenceRefusal::Unavailable)?;
        let mut table = self.lock();
        table
            .ceremonies
            .retain(|c| c.confirmation_id != challenge.confirmation_id);
        if table.ceremonies.len() >= MAX_CEREMONIES {
            table.ceremonies.pop_front();
        }
        table.ceremonies.push_back(Ceremony {
            confirmation_id: Arc::clone(&challenge.confirmation_id),
            digest: Arc::clone(&challenge.digest),
            person: Arc::from(person),
            state,
        });
        Ok(options)
    }
}

impl PresenceVerifier for Passkeys {
    fn verify(
        &self,
        challenge: &PresenceChallenge,
        person: &str,
        proof: &Value,
    ) -> Result<VerifiedPresence, PresenceRefusal> {
        if crate::too_large(proof) {
            return Err(PresenceRefusal::Invalid);
        }
        let credential = proof.get("credential").ok_or(PresenceRefusal::Invalid)?;
        // The ceremony is used up by any answer, right or wrong: an
        // assertion is never tried twice.
        let ceremony = {
            let mut table = self.lock();
            let at = table
                .ceremonies
                .iter()
                .position(|c| c.confirmation_id == challenge.confirmation_id)
                .ok_or(PresenceRefusal::Replayed)?;
            table
                .ceremonies
                .remove(at)
                .ok_or(PresenceRefusal::Replayed)?
        };
        if ceremony.digest != challenge.digest {
            return Err(PresenceRefusal::OtherRequest);
        }
        if &*ceremony.person != person {
            return Err(PresenceRefusal::NotRegistered);
        }
        let answer: PublicKeyCredential =
            serde_json::from_value(credential.clone()).map_err(|_| PresenceRefusal::Invalid)?;
        let result = self
            .inner
            .webauthn
            .finish_passkey_authentication(&answer, &ceremony.state)
            .map_err(|e| refusal(&e))?;
        // The credential must still be this person's (not removed since).
        let mut table = self.lock();
        let key = table
            .people
            .get_mut(person)
            .and_then(|p| p.keys.iter_mut().find(|k| k.cred_id() == result.cred_id()))
            .ok_or(PresenceRefusal::NotRegistered)?;
        key.update_credential(&result);
        Ok(VerifiedPresence {
            method: PresenceMethod::Webauthn,
            credential_id: Arc::from(encoded(result.cred_id())),
            user_verified: result.user_verified(),
            confirmation_id: Arc::clone(&challenge.confirmation_id),
            digest: Arc::clone(&challenge.digest),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ip_address_is_no_relying_party() {
        assert!(matches!(
            Passkeys::new("127.0.0.1", "http://127.0.0.1:8080", "x"),
            Err(PasskeyError::Configuration(_))
        ));
        assert!(Passkeys::new("localhost", "http://localhost:8080", "x").is_ok());
        assert!(Passkeys::new("example.com", "http://localhost:8080", "x").is_err());
    }

    #[test]
    fn a_person_without_a_passkey_cannot_start_an_approval() {
        let passkeys = Passkeys::new("localhost", "http://localhost:8080", "x").unwrap();
        let challenge = PresenceChallenge {
            confirmation_id: Arc::from("cnf_a"),
            digest: Arc::from("d"),
            expires_at_ms: 1,
        };
        assert_eq!(
            passkeys.start_approval("p", &challenge),
            Err(PresenceRefusal::NotRegistered)
        );
        assert_eq!(
            passkeys.verify(&challenge, "p", &serde_json::json!({"credential": {}})),
            Err(PresenceRefusal::Replayed),
            "no ceremony was started"
        );
    }

    #[test]
    fn a_registration_starts_with_a_challenge_and_user_verification_required() {
        let passkeys = Passkeys::new("localhost", "http://localhost:8080", "x").unwrap();
        let codes = crate::OneTimeCodes::new("terminal").unwrap();
        let (challenge, code) = codes.issue_enrollment("ada", 10).unwrap();
        let enrolled = codes
            .confirm_enrollment(&challenge, "ada", &code, 0)
            .unwrap();
        let options = passkeys.start_registration(enrolled, "Ada").unwrap();
        let public_key = &options["publicKey"];
        assert_eq!(public_key["rp"]["id"], "localhost");
        assert!(
            public_key["challenge"]
                .as_str()
                .is_some_and(|c| c.len() >= 43)
        );
        assert_eq!(
            public_key["authenticatorSelection"]["userVerification"],
            "required"
        );
        assert_eq!(
            passkeys.finish_registration("bob", &serde_json::json!({})),
            Err(PasskeyError::NoRegistration)
        );
    }
}
