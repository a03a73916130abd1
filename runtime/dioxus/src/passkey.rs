//! The page's half of a person-proven approval: the browser's WebAuthn
//! ceremonies, run in the person's page through Dioxus's `eval`.
//!
//! The server starts a ceremony (with `agent-surface-passkeys`:
//! `Passkeys::start_registration` or `Passkeys::start_approval` for one
//! request) and hands its options here; [`create_passkey`] or
//! [`get_assertion`] runs `navigator.credentials.create` / `get` in the
//! page, where the browser asks the person through the platform's own prompt
//! (Touch ID, Windows Hello, a security key's PIN), and returns the
//! browser's answer as JSON for the server to verify. Nothing here is proof
//! by itself: a script in the page can send anything back, and only an
//! answer the server's verifier accepts counts
//! ([`PendingConfirmations::approve_with_presence`](crate::PendingConfirmations::approve_with_presence)).

use dioxus_document::eval;
use serde_json::Value;

/// Why a ceremony in the page gave no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CeremonyError {
    /// The browser has no WebAuthn here (an old browser, or a page that is
    /// not a secure context: serve it over HTTPS or as `localhost`).
    Unsupported,
    /// The person cancelled, the prompt timed out, or no authenticator
    /// answered (the browser's `NotAllowedError`).
    NotAllowed,
    /// The browser refused for another reason (its error name and message).
    Failed(String),
    /// The page went away before it answered.
    Gone,
}

impl std::fmt::Display for CeremonyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CeremonyError::Unsupported => {
                f.write_str("this browser cannot use passkeys on this page")
            }
            CeremonyError::NotAllowed => {
                f.write_str("the passkey prompt was cancelled or timed out")
            }
            CeremonyError::Failed(why) => write!(f, "the browser refused: {why}"),
            CeremonyError::Gone => f.write_str("the page went away"),
        }
    }
}

impl std::error::Error for CeremonyError {}

/// The page's script: reads `{mode, options}`, converts base64url fields to
/// bytes, runs the ceremony, answers `{credential}` (binary fields in
/// base64url, as WebAuthn's JSON forms) or `{error, message}`.
const CEREMONY: &str = r#"
(async function () {
  function bytes(text) {
    var s = String(text).replace(/-/g, '+').replace(/_/g, '/');
    while (s.length % 4) { s += '='; }
    var raw = atob(s);
    var out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) { out[i] = raw.charCodeAt(i); }
    return out;
  }
  function text(buffer) {
    var view = new Uint8Array(buffer);
    var raw = '';
    for (var i = 0; i < view.length; i++) { raw += String.fromCharCode(view[i]); }
    return btoa(raw).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }
  var message = await dioxus.recv();
  try {
    if (!window.isSecureContext || !window.PublicKeyCredential || !navigator.credentials) {
      dioxus.send({ error: 'Unsupported', message: 'no WebAuthn in this page' });
      return;
    }
    var key = message.options.publicKey;
    key.challenge = bytes(key.challenge);
    if (message.mode === 'create') {
      key.user.id = bytes(key.user.id);
      (key.excludeCredentials || []).forEach(function (c) { c.id = bytes(c.id); });
      var made = await navigator.credentials.create({ publicKey: key });
      dioxus.send({ credential: {
        id: made.id, rawId: text(made.rawId), type: made.type, extensions: {},
        response: {
          attestationObject: text(made.response.attestationObject),
          clientDataJSON: text(made.response.clientDataJSON),
          transports: made.response.getTransports ? made.response.getTransports() : []
        }
      } });
    } else {
      (key.allowCredentials || []).forEach(function (c) { c.id = bytes(c.id); });
      var got = await navigator.credentials.get({ publicKey: key });
      dioxus.send({ credential: {
        id: got.id, rawId: text(got.rawId), type: got.type, extensions: {},
        response: {
          authenticatorData: text(got.response.authenticatorData),
          clientDataJSON: text(got.response.clientDataJSON),
          signature: text(got.response.signature),
          userHandle: got.response.userHandle ? text(got.response.userHandle) : null
        }
      } });
    }
  } catch (e) {
    dioxus.send({ error: (e && e.name) || 'Error', message: String((e && e.message) || e) });
  }
})();
"#;

async fn ceremony(mode: &str, options: Value) -> Result<Value, CeremonyError> {
    let mut page = eval(CEREMONY);
    page.send(serde_json::json!({"mode": mode, "options": options}))
        .map_err(|_| CeremonyError::Gone)?;
    let answer: Value = page.recv().await.map_err(|_| CeremonyError::Gone)?;
    if let Some(credential) = answer.get("credential") {
        return Ok(credential.clone());
    }
    let name = answer.get("error").and_then(Value::as_str).unwrap_or("");
    let message = answer.get("message").and_then(Value::as_str).unwrap_or("");
    Err(match name {
        "Unsupported" => CeremonyError::Unsupported,
        "NotAllowedError" | "AbortError" => CeremonyError::NotAllowed,
        _ => CeremonyError::Failed(
            format!("{name}: {message}")
                .chars()
                .take(200)
                .collect::<String>(),
        ),
    })
}

/// Registers a passkey in the person's browser: `options` are the
/// server's creation options (`{"publicKey": …}`, binary fields in
/// base64url); returns the new credential for the server to verify.
pub async fn create_passkey(options: Value) -> Result<Value, CeremonyError> {
    ceremony("create", options).await
}

/// Asks the person's authenticator to approve: `options` are the server's
/// request options for one request; returns the assertion for the server
/// to verify (as `{"method": "webauthn", "credential": …}` to
/// `approve_with_presence`).
pub async fn get_assertion(options: Value) -> Result<Value, CeremonyError> {
    ceremony("get", options).await
}
