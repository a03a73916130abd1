//! `OneTimeCodes`: out-of-band codes for a person without an authenticator.
//!
//! The host issues a code for a request and delivers it where the page
//! cannot read it — printed in the terminal that started the app, sent to
//! another device — and the person types it into the approval. The code is
//! derived from a secret the process keeps and the request's presence
//! challenge (its confirmation id, digest and expiry), so a code for one
//! request approves no other; it works once, and three wrong tries end it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use agent_surface::confirmation::{
    PresenceChallenge, PresenceMethod, PresenceRefusal, PresenceVerifier, VerifiedPresence,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::PasskeyError;

/// Codes issued and not yet used, at most; issuing beyond that ends the
/// oldest code (its request can then only be approved another way).
pub const MAX_ISSUED: usize = 256;

/// Wrong tries a code survives.
const TRIES: u8 = 3;

/// Digits of a code (10⁸ values, three tries: one chance in 33 million).
const DIGITS: u32 = 8;

/// The id prefix of a passkey setup's challenge.
const ENROLLMENT: &str = "enr_";

struct Issued {
    confirmation_id: Arc<str>,
    digest: Arc<str>,
    tries_left: u8,
}

/// Requests whose code was used or ran out of tries, remembered so that
/// issuing again never restores a code (at most this many; the oldest
/// first out, long after its request expired).
const MAX_SPENT: usize = 4 * MAX_ISSUED;

#[derive(Default)]
struct Table {
    issued: VecDeque<Issued>,
    /// Codes that no longer work, and why a try of one is refused.
    spent: VecDeque<(Arc<str>, Arc<str>, PresenceRefusal)>,
}

impl Table {
    fn spend(&mut self, issued: Issued, why: PresenceRefusal) {
        if self.spent.len() >= MAX_SPENT {
            self.spent.pop_front();
        }
        self.spent
            .push_back((issued.confirmation_id, issued.digest, why));
    }
}

struct Inner {
    secret: [u8; 32],
    channel: Arc<str>,
    table: Mutex<Table>,
}

/// A passkey setup that the person proved with a code delivered outside
/// the page (see [`OneTimeCodes::issue_enrollment`]): the only way to start
/// registering a passkey ([`Passkeys::start_registration`](crate::Passkeys::start_registration)),
/// so a script in the page cannot enroll a key of its own. Used once.
#[derive(Debug)]
pub struct Enrolled {
    person: Arc<str>,
}

impl Enrolled {
    /// Whose setup it is.
    pub fn person(&self) -> &str {
        &self.person
    }
}

/// The digest a setup code of `person` is bound to.
fn enrollment_digest(person: &str) -> Arc<str> {
    let mut hash = Sha256::new();
    hash.update(b"agent-surface passkey setup v1\0");
    hash.update(person.as_bytes());
    let digest: [u8; 32] = hash.finalize().into();
    Arc::from(
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
    )
}

/// Out-of-band one-time codes, bound to one request each. A handle: clones
/// share the codes.
#[derive(Clone)]
pub struct OneTimeCodes {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OneTimeCodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneTimeCodes")
            .field("channel", &self.inner.channel)
            .finish_non_exhaustive()
    }
}

impl OneTimeCodes {
    /// Codes delivered through `channel` (its name is recorded as the
    /// proof's credential: `terminal`, `sms`…), with a fresh secret.
    pub fn new(channel: &str) -> Result<OneTimeCodes, PasskeyError> {
        Ok(OneTimeCodes {
            inner: Arc::new(Inner {
                secret: crate::secret()?,
                channel: Arc::from(channel),
                table: Mutex::new(Table::default()),
            }),
        })
    }

    /// The code for the request `challenge` stands for, formatted for a
    /// person (`1234 5678`): deliver it out of band. Issuing again for the
    /// same request gives the same code and never restores its tries: a
    /// code used or run out stays refused.
    pub fn issue(&self, challenge: &PresenceChallenge) -> String {
        let mut table = self.lock();
        let same = |id: &Arc<str>, digest: &Arc<str>| {
            *id == challenge.confirmation_id && *digest == challenge.digest
        };
        let known = table
            .issued
            .iter()
            .any(|i| same(&i.confirmation_id, &i.digest))
            || table.spent.iter().any(|(id, digest, _)| same(id, digest));
        if !known {
            if table.issued.len() >= MAX_ISSUED
                && let Some(oldest) = table.issued.pop_front()
            {
                table.spend(oldest, PresenceRefusal::Invalid);
            }
            table.issued.push_back(Issued {
                confirmation_id: Arc::clone(&challenge.confirmation_id),
                digest: Arc::clone(&challenge.digest),
                tries_left: TRIES,
            });
        }
        drop(table);
        let code = self.code(challenge);
        let text = format!("{code:0width$}", width = DIGITS as usize);
        let (head, tail) = text.split_at(text.len() / 2);
        format!("{head} {tail}")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.inner
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the codes of requests `pending` no longer holds (answered,
    /// expired, withdrawn elsewhere), so that requests still waiting keep
    /// theirs however many others come and go. Setup codes are kept.
    pub fn retain_pending(&self, pending: &[Arc<str>]) {
        let mut table = self.lock();
        let (keep, ended): (VecDeque<Issued>, VecDeque<Issued>) = std::mem::take(&mut table.issued)
            .into_iter()
            .partition(|i| {
                i.confirmation_id.starts_with(ENROLLMENT) || pending.contains(&i.confirmation_id)
            });
        table.issued = keep;
        for issued in ended {
            table.spend(issued, PresenceRefusal::Invalid);
        }
    }

    /// Starts `person`'s passkey setup: the code to deliver out of band
    /// (printed in the terminal, sent to another device) and the challenge
    /// it stands for, which expires at `expires_at_ms`; keep the challenge
    /// with the page that asked, and confirm what the person types with
    /// [`confirm_enrollment`](Self::confirm_enrollment). Registering a
    /// passkey is itself an approval: without this step a script in the
    /// page could enroll a key of its own and approve with it.
    pub fn issue_enrollment(
        &self,
        person: &str,
        expires_at_ms: u64,
    ) -> Result<(PresenceChallenge, String), PasskeyError> {
        let nonce = crate::secret()?;
        let mut id = String::from(ENROLLMENT);
        for byte in nonce.iter().take(16) {
            id.push_str(&format!("{byte:02x}"));
        }
        let challenge = PresenceChallenge {
            confirmation_id: Arc::from(id),
            digest: enrollment_digest(person),
            expires_at_ms,
        };
        // One setup per person at a time: a newer one ends the older, so
        // setups started again and again (a script clicking) never push
        // the codes of requests waiting for the person out of the table.
        let mut table = self.lock();
        let (older, keep): (VecDeque<Issued>, VecDeque<Issued>) = std::mem::take(&mut table.issued)
            .into_iter()
            .partition(|i| {
                i.confirmation_id.starts_with(ENROLLMENT) && i.digest == challenge.digest
            });
        table.issued = keep;
        for setup in older {
            table.spend(setup, PresenceRefusal::Invalid);
        }
        drop(table);
        let code = self.issue(&challenge);
        Ok((challenge, code))
    }

    /// Confirms `person`'s setup with the code they typed (`now_ms`: the
    /// time on the clock `expires_at_ms` was read from): an [`Enrolled`]
    /// that starts one passkey registration. A code for another person, a
    /// wrong, used or expired code is refused (three wrong tries end it).
    pub fn confirm_enrollment(
        &self,
        challenge: &PresenceChallenge,
        person: &str,
        code: &str,
        now_ms: u64,
    ) -> Result<Enrolled, PresenceRefusal> {
        if !challenge.confirmation_id.starts_with(ENROLLMENT)
            || challenge.digest != enrollment_digest(person)
        {
            return Err(PresenceRefusal::OtherRequest);
        }
        if now_ms >= challenge.expires_at_ms {
            return Err(PresenceRefusal::Expired);
        }
        self.verify(challenge, person, &serde_json::json!({ "code": code }))?;
        Ok(Enrolled {
            person: Arc::from(person),
        })
    }

    fn code(&self, challenge: &PresenceChallenge) -> u64 {
        let mut hash = Sha256::new();
        hash.update(b"agent-surface one-time code v1\0");
        hash.update(self.inner.secret);
        hash.update(challenge.bytes());
        let digest: [u8; 32] = hash.finalize().into();
        let mut first = [0u8; 8];
        first.copy_from_slice(digest.get(..8).unwrap_or(&[0; 8]));
        u64::from_be_bytes(first) % 10u64.pow(DIGITS)
    }
}

/// The digits a person typed (spaces and dashes allowed), if it is a code.
fn typed(proof: &Value) -> Option<u64> {
    let text = proof.get("code")?.as_str()?;
    if text.len() > 32 {
        return None;
    }
    let digits: String = text
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect();
    if digits.len() != DIGITS as usize || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Compares two codes in time independent of where they differ.
fn same(a: u64, b: u64) -> bool {
    (a ^ b)
        .to_be_bytes()
        .iter()
        .fold(0u8, |acc, byte| acc | byte)
        == 0
}

impl PresenceVerifier for OneTimeCodes {
    fn verify(
        &self,
        challenge: &PresenceChallenge,
        _person: &str,
        proof: &Value,
    ) -> Result<VerifiedPresence, PresenceRefusal> {
        let expected = self.code(challenge);
        let typed = typed(proof);
        let mut table = self.lock();
        let Some(at) = table
            .issued
            .iter()
            .position(|i| i.confirmation_id == challenge.confirmation_id)
        else {
            // Used, run out of tries, or ended (said as no longer working);
            // never issued or pushed out by newer codes: fail closed.
            let why = table
                .spent
                .iter()
                .find(|(id, digest, _)| {
                    *id == challenge.confirmation_id && *digest == challenge.digest
                })
                .map_or(PresenceRefusal::Invalid, |(_, _, why)| *why);
            return Err(why);
        };
        let entry = table.issued.get_mut(at).ok_or(PresenceRefusal::Invalid)?;
        if entry.digest != challenge.digest {
            return Err(PresenceRefusal::OtherRequest);
        }
        if typed.is_some_and(|typed| same(typed, expected)) {
            if let Some(used) = table.issued.remove(at) {
                table.spend(used, PresenceRefusal::Replayed);
            }
            return Ok(VerifiedPresence {
                method: PresenceMethod::OutOfBand,
                credential_id: Arc::clone(&self.inner.channel),
                user_verified: true,
                confirmation_id: Arc::clone(&challenge.confirmation_id),
                digest: Arc::clone(&challenge.digest),
            });
        }
        entry.tries_left = entry.tries_left.saturating_sub(1);
        if entry.tries_left == 0 {
            if let Some(spent) = table.issued.remove(at) {
                table.spend(spent, PresenceRefusal::Exhausted);
            }
            return Err(PresenceRefusal::Exhausted);
        }
        Err(PresenceRefusal::Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn challenge(id: &str, digest: &str) -> PresenceChallenge {
        PresenceChallenge {
            confirmation_id: Arc::from(id),
            digest: Arc::from(digest),
            expires_at_ms: 1_000,
        }
    }

    fn proof(code: &str) -> Value {
        json!({"method": "out-of-band", "code": code})
    }

    #[test]
    fn a_code_approves_its_request_once() {
        let codes = OneTimeCodes::new("terminal").unwrap();
        let a = challenge("cnf_a", "d");
        let code = codes.issue(&a);
        assert_eq!(code.len(), 9);
        let verified = codes.verify(&a, "p", &proof(&code)).unwrap();
        assert_eq!(verified.method, PresenceMethod::OutOfBand);
        assert_eq!(&*verified.credential_id, "terminal");
        assert_eq!(
            codes.verify(&a, "p", &proof(&code)),
            Err(PresenceRefusal::Replayed),
            "used up"
        );
    }

    #[test]
    fn a_code_for_one_request_approves_no_other() {
        let codes = OneTimeCodes::new("terminal").unwrap();
        let a = challenge("cnf_a", "d");
        let b = challenge("cnf_b", "d");
        let code_a = codes.issue(&a);
        codes.issue(&b);
        assert!(codes.verify(&b, "p", &proof(&code_a)).is_err());
        let changed = challenge("cnf_a", "other digest");
        assert_eq!(
            codes.verify(&changed, "p", &proof(&code_a)),
            Err(PresenceRefusal::OtherRequest)
        );
        assert!(codes.verify(&a, "p", &proof(&code_a)).is_ok());
    }

    #[test]
    fn three_wrong_tries_end_a_code_and_unissued_requests_have_none() {
        let codes = OneTimeCodes::new("terminal").unwrap();
        let a = challenge("cnf_a", "d");
        let code = codes.issue(&a);
        let wrong = if code == "0000 0000" {
            "1111 1111"
        } else {
            "0000 0000"
        };
        for _ in 0..3 {
            assert!(codes.verify(&a, "p", &proof(wrong)).is_err());
        }
        assert!(codes.verify(&a, "p", &proof(&code)).is_err(), "ended");
        let never = challenge("cnf_never", "d");
        let guess = codes.code(&never);
        assert!(
            codes
                .verify(&never, "p", &proof(&format!("{guess:08}")))
                .is_err(),
            "a code never issued is no code"
        );
    }

    #[test]
    fn an_evicted_code_fails_closed() {
        let codes = OneTimeCodes::new("terminal").unwrap();
        let first = challenge("cnf_first", "d");
        let code = codes.issue(&first);
        for n in 0..MAX_ISSUED {
            codes.issue(&challenge(&format!("cnf_{n}"), "d"));
        }
        assert_eq!(
            codes.verify(&first, "p", &proof(&code)),
            Err(PresenceRefusal::Invalid)
        );
        assert_eq!(codes.issue(&first), code);
        assert_eq!(
            codes.verify(&first, "p", &proof(&code)),
            Err(PresenceRefusal::Invalid),
            "issuing an evicted code again does not revive it"
        );
    }

    #[test]
    fn issuing_again_never_restores_a_used_or_exhausted_code() {
        let codes = OneTimeCodes::new("terminal").unwrap();
        let a = challenge("cnf_a", "d");
        let code = codes.issue(&a);
        let wrong = if code == "0000 0000" {
            "1111 1111"
        } else {
            "0000 0000"
        };
        for _ in 0..3 {
            assert!(codes.verify(&a, "p", &proof(wrong)).is_err());
        }
        assert_eq!(codes.issue(&a), code, "the same code");
        assert!(codes.verify(&a, "p", &proof(&code)).is_err(), "still ended");
        let b = challenge("cnf_b", "d");
        let code = codes.issue(&b);
        assert!(codes.verify(&b, "p", &proof(&code)).is_ok());
        codes.issue(&b);
        assert!(codes.verify(&b, "p", &proof(&code)).is_err(), "used once");
    }

    #[test]
    fn codes_of_ended_requests_make_room_for_waiting_ones() {
        let codes = OneTimeCodes::new("terminal").unwrap();
        let waiting = challenge("cnf_waiting", "d");
        let code = codes.issue(&waiting);
        for n in 0..MAX_ISSUED {
            let id = format!("cnf_{n}");
            codes.issue(&challenge(&id, "d"));
            // Each ends before the next (withdrawn, answered elsewhere).
            codes.retain_pending(&[Arc::from("cnf_waiting")]);
        }
        assert!(codes.verify(&waiting, "p", &proof(&code)).is_ok());
    }

    #[test]
    fn a_setup_code_enrolls_its_person_once() {
        let codes = OneTimeCodes::new("terminal").unwrap();
        let (challenge, code) = codes.issue_enrollment("ada", 1_000).unwrap();
        assert_eq!(
            codes.confirm_enrollment(&challenge, "bob", &code, 0).err(),
            Some(PresenceRefusal::OtherRequest),
            "another person's setup"
        );
        assert_eq!(
            codes
                .confirm_enrollment(&challenge, "ada", &code, 1_000)
                .err(),
            Some(PresenceRefusal::Expired)
        );
        let enrolled = codes
            .confirm_enrollment(&challenge, "ada", &code, 0)
            .unwrap();
        assert_eq!(enrolled.person(), "ada");
        assert!(
            codes
                .confirm_enrollment(&challenge, "ada", &code, 0)
                .is_err(),
            "once"
        );
        // A request's code is no setup code, nor the reverse.
        let request = super::PresenceChallenge {
            confirmation_id: Arc::from("cnf_x"),
            digest: Arc::clone(&challenge.digest),
            expires_at_ms: 1_000,
        };
        let code = codes.issue(&request);
        assert_eq!(
            codes.confirm_enrollment(&request, "ada", &code, 0).err(),
            Some(PresenceRefusal::OtherRequest)
        );
    }

    #[test]
    fn setups_started_again_and_again_never_push_out_a_waiting_requests_code() {
        let codes = OneTimeCodes::new("terminal").unwrap();
        let waiting = challenge("cnf_waiting", "d");
        let code = codes.issue(&waiting);
        let mut last = None;
        for _ in 0..(2 * MAX_ISSUED) {
            last = Some(codes.issue_enrollment("ada", 1_000).unwrap());
        }
        assert!(codes.verify(&waiting, "p", &proof(&code)).is_ok());
        let (setup, setup_code) = last.unwrap();
        assert!(
            codes
                .confirm_enrollment(&setup, "ada", &setup_code, 0)
                .is_ok(),
            "the newest works"
        );
    }

    #[test]
    fn typed_codes_are_read_strictly() {
        assert_eq!(typed(&proof("1234 5678")), Some(12_345_678));
        assert_eq!(typed(&proof("1234-5678")), Some(12_345_678));
        for bad in ["1234567", "123456789", "1234 567x", "", "１２３４５６７８"] {
            assert_eq!(typed(&proof(bad)), None, "{bad}");
        }
        assert_eq!(typed(&json!({"code": 12345678})), None);
        assert_eq!(typed(&proof(&"1".repeat(40))), None);
    }
}
