//! The person's sign-in on the web console: a secret the agent's channels
//! do not have.
//!
//! At start the console prints a one-time sign-in URL
//! (`/login?token=…`, 256 random bits). Opening it sets an `HttpOnly;
//! SameSite=Strict` session cookie and uses the token up; the console then
//! prints the next one-time URL, for another browser. Every page route and
//! the websocket require the cookie: no cookie, no page, no websocket, no
//! approval. The cookie never travels with a request another site's page
//! makes (`SameSite=Strict`), script cannot read it (`HttpOnly`), and
//! nothing on `/mcp` accepts or hands out either secret.

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::http::{HeaderMap, header};
use tokio::sync::watch;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "devices_console";

/// Browser sessions kept at once; signing in beyond that ends the oldest.
const MAX_SESSIONS: usize = 16;

/// A fresh 256-bit secret as hex; `None` if the system has no randomness
/// (the console then refuses to serve rather than use a guessable secret).
fn secret() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares two secrets in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

struct State {
    token: String,
    sessions: VecDeque<String>,
}

/// The console's sign-in: the current one-time token and the signed-in
/// browser sessions.
pub(crate) struct Login {
    state: Mutex<State>,
    /// The current one-time token (a new one after each sign-in).
    tokens: watch::Sender<String>,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login").finish_non_exhaustive()
    }
}

impl Login {
    /// A sign-in with a fresh one-time token.
    pub(crate) fn new() -> Option<Login> {
        let token = secret()?;
        Some(Login {
            tokens: watch::channel(token.clone()).0,
            state: Mutex::new(State {
                token,
                sessions: VecDeque::new(),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The current one-time token, and every later one.
    pub(crate) fn tokens(&self) -> watch::Receiver<String> {
        self.tokens.subscribe()
    }

    /// Uses `token` up: a new browser session's secret when it is the
    /// current one-time token (the next token is issued at once), `None`
    /// otherwise.
    pub(crate) fn sign_in(&self, token: &str) -> Option<String> {
        let session = secret()?;
        let next = secret()?;
        let mut state = self.lock();
        if !same(&state.token, token) {
            return None;
        }
        state.token = next.clone();
        if state.sessions.len() >= MAX_SESSIONS {
            state.sessions.pop_front();
        }
        state.sessions.push_back(session.clone());
        drop(state);
        self.tokens.send_replace(next);
        Some(session)
    }

    /// Whether the request carries a signed-in browser session's cookie.
    pub(crate) fn signed_in(&self, headers: &HeaderMap) -> bool {
        let Some(presented) = cookie(headers) else {
            return false;
        };
        let state = self.lock();
        // Every session compared, so timing says nothing about which.
        state
            .sessions
            .iter()
            .fold(false, |found, session| found | same(session, &presented))
    }
}

/// The value of the session cookie in `headers`, if any.
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
}

/// The `Set-Cookie` value of a browser session.
pub(crate) fn set_cookie(session: &str) -> String {
    format!("{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_signs_in_once_and_the_next_one_is_issued() {
        let login = Login::new().unwrap();
        let tokens = login.tokens();
        let first = tokens.borrow().clone();
        let session = login.sign_in(&first).unwrap();
        assert!(login.sign_in(&first).is_none(), "the token is single use");
        let second = tokens.borrow().clone();
        assert_ne!(first, second);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            format!("other=1; {COOKIE}={session}").parse().unwrap(),
        );
        assert!(login.signed_in(&headers));
        headers.insert(header::COOKIE, format!("{COOKIE}={first}").parse().unwrap());
        assert!(!login.signed_in(&headers), "a token is not a session");
    }
}
