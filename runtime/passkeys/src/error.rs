//! `PasskeyError`: why a passkey could not be set up or registered.

/// Why a passkey could not be set up or registered.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PasskeyError {
    /// The relying party id is not the origin's host (or a parent domain of
    /// it), or the origin is not a URL. WebAuthn needs a domain: an IP
    /// address such as `127.0.0.1` is refused by browsers; use `localhost`.
    Configuration(String),
    /// No registration was started for this person, or it was replaced or
    /// expired.
    NoRegistration,
    /// The browser's answer did not verify or could not be read.
    Rejected(String),
    /// The credential is already registered (to this person or another).
    AlreadyRegistered,
    /// The table of people or of one person's passkeys is full.
    Full,
    /// The system has no randomness for a secret.
    NoRandomness,
}

impl std::fmt::Display for PasskeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PasskeyError::Configuration(why) => write!(f, "passkeys are misconfigured: {why}"),
            PasskeyError::NoRegistration => {
                f.write_str("no passkey registration is in progress for this person")
            }
            PasskeyError::Rejected(why) => write!(f, "the passkey was not accepted: {why}"),
            PasskeyError::AlreadyRegistered => f.write_str("this passkey is already registered"),
            PasskeyError::Full => f.write_str("no more passkeys can be registered"),
            PasskeyError::NoRandomness => f.write_str("the system has no randomness"),
        }
    }
}

impl std::error::Error for PasskeyError {}
