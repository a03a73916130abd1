//! JWT bearer tokens (RFC 9068 style access tokens), validated with
//! `jsonwebtoken`: the signature by a configured key (an HMAC secret, a PEM
//! public key) or by the key a JWKS document names (`kid`), the issuer, the
//! audience (this resource), the expiry and not-before. The algorithm is the
//! key's, never the token's choice (`none` is never accepted).
//!
//! The identity's subject is `sub`; its scopes are `scope` (space
//! separated) or `scp` (a list); its host context is
//! `{"user": {"id": sub, "permissions": scopes}, "scopes": scopes}`.

use std::path::Path;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{AlgorithmFamily, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;

use super::{Authenticator, Identity, Rejected};

/// The largest key or JWKS file read.
const MAX_KEY_FILE_BYTES: u64 = 1 << 20;

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
const LEEWAY_SECONDS: u64 = 30;

/// The key tokens are signed with.
#[derive(Clone)]
pub enum JwtKey {
    /// One key: an HMAC secret or a public key.
    Single(DecodingKey),
    /// A JWKS document: the token's `kid` names the key (a set of one key
    /// needs no `kid`).
    Set(JwkSet),
}

impl std::fmt::Debug for JwtKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwtKey::Single(key) => write!(f, "JwtKey::Single({:?})", key.family()),
            JwtKey::Set(set) => write!(f, "JwtKey::Set({} keys)", set.keys.len()),
        }
    }
}

/// Why a JWT key could not be loaded.
#[derive(Debug)]
pub struct JwtError {
    message: String,
}

impl std::fmt::Display for JwtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JwtError {}

fn error(message: impl Into<String>) -> JwtError {
    JwtError {
        message: message.into(),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, JwtError> {
    let cannot = |err: std::io::Error| error(format!("cannot read {}: {err}", path.display()));
    if std::fs::metadata(path).map_err(cannot)?.len() > MAX_KEY_FILE_BYTES {
        return Err(error(format!("{} is over 1 MiB", path.display())));
    }
    std::fs::read(path).map_err(cannot)
}

impl JwtKey {
    /// An HMAC secret (`HS256`, `HS384`, `HS512`).
    pub fn hmac(secret: &[u8]) -> Result<JwtKey, JwtError> {
        if secret.len() < 32 {
            return Err(error("an HMAC secret needs at least 32 bytes"));
        }
        DecodingKey::from_secret(secret)
            .map(JwtKey::Single)
            .map_err(|err| error(format!("not an HMAC secret: {err}")))
    }

    /// A PEM public key: RSA (`RS*`, `PS*`), EC (`ES256`, `ES384`) or
    /// Ed25519 (`EdDSA`).
    pub fn pem(pem: &[u8]) -> Result<JwtKey, JwtError> {
        DecodingKey::from_rsa_pem(pem)
            .or_else(|_| DecodingKey::from_ec_pem(pem))
            .or_else(|_| DecodingKey::from_ed_pem(pem))
            .map(JwtKey::Single)
            .map_err(|_| error("not a PEM RSA, EC or Ed25519 public key"))
    }

    /// A JWKS document (`{"keys": [...]}`).
    pub fn jwks(json: &[u8]) -> Result<JwtKey, JwtError> {
        let set: JwkSet = serde_json::from_slice(json)
            .map_err(|err| error(format!("not a JWKS document: {err}")))?;
        if set.keys.is_empty() {
            return Err(error("the JWKS document has no keys"));
        }
        Ok(JwtKey::Set(set))
    }

    /// [`pem`](JwtKey::pem) of a file.
    pub fn pem_file(path: impl AsRef<Path>) -> Result<JwtKey, JwtError> {
        JwtKey::pem(&read(path.as_ref())?)
    }

    /// [`jwks`](JwtKey::jwks) of a file.
    pub fn jwks_file(path: impl AsRef<Path>) -> Result<JwtKey, JwtError> {
        JwtKey::jwks(&read(path.as_ref())?)
    }

    /// The key for a token whose header names `kid`.
    fn key(&self, kid: Option<&str>) -> Result<DecodingKey, Rejected> {
        match self {
            JwtKey::Single(key) => Ok(key.clone()),
            JwtKey::Set(set) => {
                let jwk = match (kid, set.keys.as_slice()) {
                    (Some(kid), _) => set.find(kid),
                    (None, [only]) => Some(only),
                    (None, _) => None,
                };
                let jwk = jwk.ok_or_else(|| Rejected::new("no key in the JWKS for this token"))?;
                DecodingKey::from_jwk(jwk).map_err(|_| Rejected::new("unusable JWKS key"))
            }
        }
    }
}

/// An [`Authenticator`] of JWT access tokens.
///
/// ```
/// use agent_surface::mcp::auth::{JwtAuthenticator, JwtKey};
///
/// let key = JwtKey::hmac(b"a secret of at least thirty-two bytes")?;
/// let jwt = JwtAuthenticator::new("https://auth.example.com", "https://mcp.example.com/mcp", key);
/// # let _ = jwt;
/// # Ok::<(), agent_surface::mcp::auth::JwtError>(())
/// ```
#[derive(Clone, Debug)]
pub struct JwtAuthenticator {
    issuer: String,
    audience: String,
    key: JwtKey,
}

impl JwtAuthenticator {
    /// Tokens issued by `issuer` for `audience` (this resource's canonical
    /// URI), signed with `key`.
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        key: JwtKey,
    ) -> JwtAuthenticator {
        JwtAuthenticator {
            issuer: issuer.into(),
            audience: audience.into(),
            key,
        }
    }
}

impl Authenticator for JwtAuthenticator {
    fn authenticate(&self, token: &str) -> Result<Identity, Rejected> {
        let header = decode_header(token).map_err(|_| Rejected::new("not a JWT"))?;
        let key = self.key.key(header.kid.as_deref())?;
        let family: AlgorithmFamily = key.family();
        if !family.algorithms().contains(&header.alg) {
            return Err(Rejected::new("the token's algorithm is not the key's"));
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        let data = decode::<Value>(token, &key, &validation)
            .map_err(|err| Rejected::new(format!("invalid JWT: {err}")))?;
        let claims = data.claims;
        // RFC 7519 §4.1.1 makes `iss` one string and RFC 9068 §4 asks for
        // an exact match; the decoder also accepts a list containing it.
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err(Rejected::new(
                "the JWT's issuer is not one string equal to the issuer",
            ));
        }
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|sub| !sub.is_empty())
            .ok_or_else(|| Rejected::new("the JWT has no subject"))?;
        Ok(Identity::new(subject, scopes(&claims)))
    }
}

/// `scope` (space separated) or `scp` (a list or a string).
fn scopes(claims: &Value) -> Vec<String> {
    let split = |text: &str| text.split_whitespace().map(str::to_owned).collect();
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => split(scope),
        (_, Some(Value::String(scp))) => split(scp),
        (_, Some(Value::Array(scp))) => scp
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}
