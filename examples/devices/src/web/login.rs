//! The person's sign-in on the web console: secrets the agent's channels
//! do not have, and that no other local origin receives.
//!
//! At start the console prints a one-time sign-in URL (`/login?token=…`,
//! 256 random bits). Opening it uses the token up (the console then prints
//! the next one, for another browser) and gives that browser two secrets:
//!
//! - a **page cookie** (`HttpOnly; SameSite=Strict`, named after the
//!   console's port): no cookie, no page. Browsers send cookies for a host
//!   to *every* port of it, so a server on another loopback port the person
//!   visits would receive it: it only opens the page shell, which holds no
//!   data and cannot act.
//! - a **socket key**, kept in the page's `localStorage`, which belongs to
//!   the console's exact origin (scheme, host *and port*): no page of
//!   another origin can read it, and the browser never sends it by itself.
//!   The websocket — the only way to see or answer anything — requires it,
//!   with an `Origin` equal to the console's own.
//!
//! At most [`MAX_SESSIONS`] browsers are signed in; a sign-in beyond that
//! ends the oldest, and its open websockets close at once.

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::http::{HeaderMap, header};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Browser sessions kept at once; signing in beyond that ends the oldest.
pub(crate) const MAX_SESSIONS: usize = 16;

/// The `localStorage` key of the socket key.
pub(crate) const SOCKET_KEY: &str = "devices_console_socket";

/// A fresh 256-bit secret as hex; `None` if the system has no randomness
/// (the console then refuses to serve rather than use a guessable secret).
pub(super) fn secret() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares two secrets in time independent of where they differ.
pub(super) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// One signed-in browser.
struct Session {
    cookie: String,
    socket: String,
    /// Fires when the session ends: its websockets close.
    ended: CancellationToken,
}

struct State {
    token: String,
    sessions: VecDeque<Session>,
}

/// What a sign-in gives the browser.
pub(crate) struct SignedIn {
    /// The page cookie's value.
    pub(crate) cookie: String,
    /// The socket key, for `localStorage`.
    pub(crate) socket: String,
}

/// The console's sign-in: the current one-time token and the signed-in
/// browser sessions.
pub(crate) struct Login {
    state: Mutex<State>,
    /// The current one-time token (a new one after each sign-in).
    tokens: watch::Sender<String>,
    /// The page cookie's name: one per console port, so two consoles on
    /// one machine never overwrite each other's.
    cookie_name: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login").finish_non_exhaustive()
    }
}

impl Login {
    /// A sign-in for the console on `port`, with a fresh one-time token.
    pub(crate) fn new(port: u16) -> Option<Login> {
        let token = secret()?;
        Some(Login {
            tokens: watch::channel(token.clone()).0,
            state: Mutex::new(State {
                token,
                sessions: VecDeque::new(),
            }),
            cookie_name: format!("devices_console_{port}"),
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

    /// Uses `token` up: a new browser session when it is the current
    /// one-time token (the next token is issued at once), `None` otherwise.
    pub(crate) fn sign_in(&self, token: &str) -> Option<SignedIn> {
        let cookie = secret()?;
        let socket = secret()?;
        let next = secret()?;
        let mut state = self.lock();
        if !same(&state.token, token) {
            return None;
        }
        state.token = next.clone();
        let evicted = if state.sessions.len() >= MAX_SESSIONS {
            state.sessions.pop_front()
        } else {
            None
        };
        state.sessions.push_back(Session {
            cookie: cookie.clone(),
            socket: socket.clone(),
            ended: CancellationToken::new(),
        });
        drop(state);
        if let Some(evicted) = evicted {
            evicted.ended.cancel();
        }
        self.tokens.send_replace(next);
        Some(SignedIn { cookie, socket })
    }

    /// Whether the request carries a signed-in browser's page cookie.
    pub(crate) fn page_allowed(&self, headers: &HeaderMap) -> bool {
        let presented = self.cookies(headers);
        let state = self.lock();
        // Every pair compared, so timing says nothing about which matched.
        state.sessions.iter().fold(false, |found, session| {
            presented
                .iter()
                .fold(found, |found, value| found | same(&session.cookie, value))
        })
    }

    /// Signs out the browser whose page cookie the request carries: its
    /// session ends, and its open pages stop at once. Whether one did.
    pub(crate) fn sign_out(&self, headers: &HeaderMap) -> bool {
        let presented = self.cookies(headers);
        let mut state = self.lock();
        let mut ended = Vec::new();
        state.sessions.retain(|session| {
            let this = presented
                .iter()
                .fold(false, |found, value| found | same(&session.cookie, value));
            if this {
                ended.push(session.ended.clone());
            }
            !this
        });
        drop(state);
        for token in &ended {
            token.cancel();
        }
        !ended.is_empty()
    }

    /// The `Set-Cookie` value that forgets the page cookie.
    pub(crate) fn clear_cookie(&self) -> String {
        format!(
            "{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
            self.cookie_name
        )
    }

    /// The session a websocket may join: the page cookie and the socket key
    /// of one signed-in browser; what ends it.
    pub(crate) fn socket_allowed(
        &self,
        headers: &HeaderMap,
        socket_key: &str,
    ) -> Option<CancellationToken> {
        let presented = self.cookies(headers);
        let state = self.lock();
        let mut joined = None;
        for session in &state.sessions {
            let cookie = presented
                .iter()
                .fold(false, |found, value| found | same(&session.cookie, value));
            if cookie & same(&session.socket, socket_key) {
                joined = Some(session.ended.clone());
            }
        }
        joined
    }

    /// Every value of the page cookie in `headers` (a page of another
    /// local origin may plant a look-alike: each is tried).
    fn cookies(&self, headers: &HeaderMap) -> Vec<String> {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == self.cookie_name)
            .map(|(_, value)| value.to_owned())
            .take(8)
            .collect()
    }

    /// The `Set-Cookie` value of a browser's page cookie.
    pub(crate) fn set_cookie(&self, cookie: &str) -> String {
        format!(
            "{}={cookie}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie_name
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cookie_header(login: &Login, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            format!(
                "other=1; {}=planted; {}={value}",
                login.cookie_name, login.cookie_name
            )
            .parse()
            .unwrap(),
        );
        headers
    }

    #[test]
    fn a_token_signs_in_once_and_the_next_one_is_issued() {
        let login = Login::new(8080).unwrap();
        let tokens = login.tokens();
        let first = tokens.borrow().clone();
        let signed = login.sign_in(&first).unwrap();
        assert!(login.sign_in(&first).is_none(), "the token is single use");
        assert_ne!(first, *tokens.borrow());
        let headers = cookie_header(&login, &signed.cookie);
        assert!(
            login.page_allowed(&headers),
            "a planted look-alike does not hide it"
        );
        assert!(login.socket_allowed(&headers, &signed.socket).is_some());
        assert!(
            login.socket_allowed(&headers, &signed.cookie).is_none(),
            "the cookie alone opens no socket"
        );
        assert!(
            !login.page_allowed(&cookie_header(&login, &first)),
            "a token is not a session"
        );
    }

    #[test]
    fn signing_out_ends_that_browsers_session_and_its_sockets_only() {
        let login = Login::new(8080).unwrap();
        let tokens = login.tokens();
        let current = || tokens.borrow().clone();
        let first = login.sign_in(&current()).unwrap();
        let second = login.sign_in(&current()).unwrap();
        let first_headers = cookie_header(&login, &first.cookie);
        let second_headers = cookie_header(&login, &second.cookie);
        let first_end = login.socket_allowed(&first_headers, &first.socket).unwrap();
        let second_end = login
            .socket_allowed(&second_headers, &second.socket)
            .unwrap();
        assert!(login.sign_out(&first_headers));
        assert!(first_end.is_cancelled(), "its open websockets close");
        assert!(!second_end.is_cancelled(), "another browser stays");
        assert!(!login.page_allowed(&first_headers));
        assert!(login.page_allowed(&second_headers));
        assert!(!login.sign_out(&first_headers), "once");
    }

    #[test]
    fn the_oldest_session_ends_beyond_the_limit_and_its_sockets_close() {
        let login = Login::new(8080).unwrap();
        let tokens = login.tokens();
        let current = || tokens.borrow().clone();
        let first = login.sign_in(&current()).unwrap();
        let ended = login
            .socket_allowed(&cookie_header(&login, &first.cookie), &first.socket)
            .unwrap();
        for _ in 0..MAX_SESSIONS {
            login.sign_in(&current()).unwrap();
        }
        assert!(ended.is_cancelled(), "its open websockets close");
        assert!(!login.page_allowed(&cookie_header(&login, &first.cookie)));
    }
}
