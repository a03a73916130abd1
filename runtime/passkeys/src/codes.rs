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

struct Issued {
    confirmation_id: Arc<str>,
    digest: Arc<str>,
    tries_left: u8,
}

struct Inner {
    secret: [u8; 32],
    channel: Arc<str>,
    issued: Mutex<VecDeque<Issued>>,
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
                issued: Mutex::new(VecDeque::new()),
            }),
        })
    }

    /// The code for the request `challenge` stands for, formatted for a
    /// person (`1234 5678`): deliver it out of band. Issuing again for the
    /// same request gives the same code and does not restore its tries.
    pub fn issue(&self, challenge: &PresenceChallenge) -> String {
        let mut issued = self.lock();
        let known = issued.iter().any(|i| {
            i.confirmation_id == challenge.confirmation_id && i.digest == challenge.digest
        });
        if !known {
            if issued.len() >= MAX_ISSUED {
                issued.pop_front();
            }
            issued.push_back(Issued {
                confirmation_id: Arc::clone(&challenge.confirmation_id),
                digest: Arc::clone(&challenge.digest),
                tries_left: TRIES,
            });
        }
        drop(issued);
        let code = self.code(challenge);
        let text = format!("{code:0width$}", width = DIGITS as usize);
        let (head, tail) = text.split_at(text.len() / 2);
        format!("{head} {tail}")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Issued>> {
        self.inner
            .issued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
        let mut issued = self.lock();
        let Some(at) = issued
            .iter()
            .position(|i| i.confirmation_id == challenge.confirmation_id)
        else {
            // Never issued, used, or ended by newer codes: fail closed.
            return Err(PresenceRefusal::Invalid);
        };
        let entry = issued.get_mut(at).ok_or(PresenceRefusal::Invalid)?;
        if entry.digest != challenge.digest {
            return Err(PresenceRefusal::OtherRequest);
        }
        if typed.is_some_and(|typed| same(typed, expected)) {
            issued.remove(at);
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
            issued.remove(at);
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
            Err(PresenceRefusal::Invalid),
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
