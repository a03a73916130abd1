//! Static bearer tokens: a table of tokens (or their SHA-256 digests), each
//! naming the identity it speaks for, loaded from a JSON file.
//!
//! ```json
//! {"tokens": [
//!   {"token": "correct-horse-battery", "subject": "admin",
//!    "scopes": ["mcp", "devices:read", "devices:write"]},
//!   {"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
//!    "subject": "viewer", "scopes": ["mcp", "devices:read"]}
//! ]}
//! ```
//!
//! Each identity's host context is `{"user": {"id": subject, "permissions":
//! permissions}, "scopes": scopes}`; `permissions` defaults to the scopes.
//! Tokens are compared by digest, never as text.

use std::path::Path;

use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Authenticator, Identity, Rejected};
use crate::context::HostContext;

/// The largest token file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// An [`Authenticator`] over a fixed table of bearer tokens.
///
/// ```
/// use agent_surface::mcp::auth::{Authenticator, Identity, StaticTokens};
///
/// let tokens = StaticTokens::from_json(
///     r#"{"tokens": [{"token": "t-admin", "subject": "admin", "scopes": ["mcp"]}]}"#,
/// )?;
/// assert_eq!(tokens.authenticate("t-admin").map(|who| who.subject().to_owned()), Ok("admin".to_owned()));
/// assert!(tokens.authenticate("t-guess").is_err());
/// # Ok::<(), agent_surface::mcp::auth::TokenFileError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct StaticTokens {
    by_digest: FxHashMap<[u8; 32], Identity>,
}

/// Why a token file could not be loaded.
#[derive(Debug)]
pub struct TokenFileError {
    message: String,
}

impl std::fmt::Display for TokenFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TokenFileError {}

fn error(message: impl Into<String>) -> TokenFileError {
    TokenFileError {
        message: message.into(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    tokens: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    token: Option<String>,
    sha256: Option<String>,
    subject: String,
    #[serde(default)]
    scopes: Vec<String>,
    permissions: Option<Vec<String>>,
}

impl StaticTokens {
    /// An empty table (every token refused).
    pub fn new() -> StaticTokens {
        StaticTokens::default()
    }

    /// Adds `token`, speaking for `identity`.
    #[must_use]
    pub fn with_token(mut self, token: &str, identity: Identity) -> StaticTokens {
        self.by_digest.insert(digest(token), identity);
        self
    }

    /// The table of a JSON document (see the module docs).
    pub fn from_json(text: &str) -> Result<StaticTokens, TokenFileError> {
        let file: TokenFile = serde_json::from_str(text)
            .map_err(|err| error(format!("the token file is not valid: {err}")))?;
        let mut tokens = StaticTokens::new();
        for (at, entry) in file.tokens.into_iter().enumerate() {
            let key = match (&entry.token, &entry.sha256) {
                (Some(token), None) if !token.trim().is_empty() => digest(token),
                (None, Some(hex)) => from_hex(hex)
                    .ok_or_else(|| error(format!("tokens[{at}].sha256 is not 64 hex digits")))?,
                _ => {
                    return Err(error(format!(
                        "tokens[{at}] needs exactly one of `token` (non-empty) and `sha256`"
                    )));
                }
            };
            if entry.subject.trim().is_empty() {
                return Err(error(format!("tokens[{at}].subject is empty")));
            }
            let permissions = entry.permissions.unwrap_or_else(|| entry.scopes.clone());
            let host = HostContext::new()
                .with(
                    "user",
                    json!({"id": entry.subject, "permissions": permissions}),
                )
                .with("scopes", json!(entry.scopes));
            let identity = Identity::new(entry.subject, entry.scopes).with_host(host);
            if tokens.by_digest.insert(key, identity).is_some() {
                return Err(error(format!("tokens[{at}] repeats an earlier token")));
            }
        }
        Ok(tokens)
    }

    /// The table of the JSON file at `path` (at most 1 MiB).
    pub fn from_file(path: impl AsRef<Path>) -> Result<StaticTokens, TokenFileError> {
        let path = path.as_ref();
        let cannot = |err: std::io::Error| error(format!("cannot read {}: {err}", path.display()));
        let length = std::fs::metadata(path).map_err(cannot)?.len();
        if length > MAX_FILE_BYTES {
            return Err(error(format!("{} is over 1 MiB", path.display())));
        }
        let text = std::fs::read_to_string(path).map_err(cannot)?;
        StaticTokens::from_json(&text)
    }

    /// How many tokens the table holds.
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    /// Whether the table holds no token.
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }
}

impl Authenticator for StaticTokens {
    fn authenticate(&self, token: &str) -> Result<Identity, Rejected> {
        self.by_digest
            .get(&digest(token))
            .cloned()
            .ok_or_else(|| Rejected::new("not a known token"))
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn from_hex(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0_u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let text = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}
