//! Person-proven approvals for `agent-surface`: proofs that the person — not
//! a script in their page, a browser extension or a browser agent with
//! trusted input — approved one exact request.
//!
//! A registry built with
//! [`RegistryBuilder::require_presence`](agent_surface::registry::RegistryBuilder::require_presence)
//! approves the requests its rule covers only with a proof its verifier
//! accepts. This crate has two verifiers, and [`PresenceMethods`], which
//! serves both:
//!
//! - [`Passkeys`]: WebAuthn with user verification (a passkey, Touch ID,
//!   Windows Hello, a security key with a PIN). The person registers a
//!   passkey once, after proving the setup with a code from outside the page
//!   ([`OneTimeCodes::issue_enrollment`]: a page script could otherwise
//!   enroll a key of its own); each approval is an assertion over a challenge issued
//!   for exactly one request (its confirmation id, digest and expiry),
//!   single use, for the person who registered the credential.
//! - [`OneTimeCodes`]: an out-of-band fallback for a person without an
//!   authenticator: a code derived from a secret and the request, delivered
//!   where the page cannot read it (the terminal that started the app,
//!   another device) and typed by the person. Three tries, single use.
//!
//! A proof is the JSON the person's page sends back:
//! `{"method": "webauthn", "credential": <the assertion>}` or
//! `{"method": "out-of-band", "code": "1234 5678"}`.
//!
//! ```
//! use agent_surface::Registry;
//! use agent_surface::confirmation::PresenceRule;
//! use agent_surface_passkeys::{OneTimeCodes, Passkeys, PresenceMethods};
//!
//! # fn main() -> Result<(), agent_surface_passkeys::PasskeyError> {
//! let passkeys = Passkeys::new("localhost", "http://localhost:8080", "Devices console")?;
//! let codes = OneTimeCodes::new("terminal")?;
//! let registry = Registry::builder()
//!     .approval_channel("console")
//!     .require_presence(
//!         PresenceRule::destructive_or_irreversible(),
//!         PresenceMethods::new().passkeys(passkeys.clone()).codes(codes.clone()),
//!     )
//!     .build();
//! # let _ = registry;
//! # Ok(())
//! # }
//! ```

mod codes;
mod error;
mod methods;
mod passkeys;

pub use codes::{Enrolled, MAX_ISSUED, OneTimeCodes};
pub use error::PasskeyError;
pub use methods::PresenceMethods;
pub use passkeys::{MAX_CEREMONIES, MAX_PASSKEYS_PER_PERSON, MAX_PEOPLE, Passkeys};

/// Most bytes of one proof (its JSON text): an assertion is a few hundred
/// bytes; anything far larger is refused before it is parsed.
pub const MAX_PROOF_BYTES: usize = 16 * 1024;

/// A fresh 32-byte secret from the system's randomness.
fn secret() -> Result<[u8; 32], PasskeyError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| PasskeyError::NoRandomness)?;
    Ok(bytes)
}

/// The size of `value` as JSON text, counted up to `MAX_PROOF_BYTES + 1`.
fn too_large(value: &serde_json::Value) -> bool {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            if self.0 > MAX_PROOF_BYTES {
                return Err(std::io::Error::other("too large"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Counter(0), value).is_err()
}
