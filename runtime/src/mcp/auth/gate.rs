//! The authentication gate in front of `/mcp`: the bearer token becomes the
//! request's identity (or a `401`/`403` that says nothing about tools), and
//! each session stays bound to the identity that opened it.

use std::sync::{Arc, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use axum::extract::Request;
use axum::response::Response;
use http::{HeaderValue, Method, StatusCode, header};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{SessionId, SessionManager};
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use super::{Identity, ResourceServer};
use crate::context::HostContext;
use crate::mcp::http_gate::{Onward, SESSION_NOT_FOUND};
use crate::mcp::origin::OriginGate;
use crate::mcp::plain::plain;

/// The session header of the streamable HTTP transport.
const SESSION_HEADER: &str = "mcp-session-id";

/// The longest bearer token read; longer ones are refused unread.
const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The longest subject kept in a consumer id, in characters.
const MAX_SUBJECT_CHARS: usize = 64;

/// The identity a request authenticated as, in its extensions (the MCP
/// session reads it from the request parts).
#[derive(Clone, Debug)]
pub(crate) struct Authenticated {
    /// The consumer id: the subject and a fingerprint of its host context.
    pub(crate) consumer: String,
    /// How a person would name it.
    pub(crate) subject: String,
    pub(crate) host: HostContext,
}

/// Each session's consumer and when it was bound (a counter).
type Owners = FxHashMap<String, (String, u64)>;

/// The gate's state.
pub(crate) struct AuthGate {
    pub(crate) auth: ResourceServer,
    /// `None` where the origin was checked before the gate.
    pub(crate) origin: Option<OriginGate>,
    pub(crate) sessions: Arc<LocalSessionManager>,
    /// Which consumer opened each session, and when (a counter).
    pub(crate) owners: std::sync::Mutex<(Owners, u64)>,
    /// The most sessions one identity holds at once: opening another ends
    /// its oldest, so one credential cannot take every session of the cap.
    pub(crate) max_sessions_per_identity: usize,
    /// Each identity's requests and streams in flight: at most a quarter of
    /// the endpoint's share of connections (at least one), so one
    /// credential's streams cannot take them all.
    in_flight: std::sync::Mutex<FxHashMap<String, Arc<Semaphore>>>,
    /// The most requests and streams one identity holds at once.
    max_in_flight_per_identity: usize,
    /// Past this many entries, those of idle identities are dropped.
    max_in_flight_entries: usize,
    /// The value of a `401`'s `WWW-Authenticate` without a token, with a
    /// refused token, and of a `403`.
    challenges: [HeaderValue; 3],
}

impl AuthGate {
    pub(crate) fn new(
        auth: ResourceServer,
        origin: Option<OriginGate>,
        sessions: Arc<LocalSessionManager>,
        max_sessions: usize,
        mcp_share: usize,
    ) -> AuthGate {
        let quoted = |text: &str| text.replace(['"', '\\'], "");
        let metadata = quoted(&auth.metadata_url());
        let scope = quoted(&auth.required().join(" "));
        let scope_param = if scope.is_empty() {
            String::new()
        } else {
            format!(", scope=\"{scope}\"")
        };
        let challenge = |text: String| {
            HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
        };
        let challenges = [
            challenge(format!(
                "Bearer resource_metadata=\"{metadata}\"{scope_param}"
            )),
            challenge(format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"{metadata}\"{scope_param}"
            )),
            challenge(format!(
                "Bearer error=\"insufficient_scope\"{scope_param}, resource_metadata=\"{metadata}\""
            )),
        ];
        AuthGate {
            auth,
            origin,
            sessions,
            owners: std::sync::Mutex::new((FxHashMap::default(), 0)),
            max_sessions_per_identity: (max_sessions / 4).max(1),
            in_flight: std::sync::Mutex::new(FxHashMap::default()),
            max_in_flight_per_identity: (mcp_share / 4).max(1),
            max_in_flight_entries: mcp_share.saturating_mul(2).saturating_add(16),
            challenges,
        }
    }

    fn refuse(&self, refusal: Refusal) -> Response {
        let (status, text) = match refusal {
            Refusal::Missing | Refusal::Invalid => (StatusCode::UNAUTHORIZED, UNAUTHORIZED),
            Refusal::Scope => (StatusCode::FORBIDDEN, FORBIDDEN),
        };
        let mut response = plain(status, text);
        if let Some(value) = self.challenges.get(refusal as usize) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value.clone());
        }
        response
    }

    /// The request's identity, or the refusal to send.
    fn authenticate(&self, request: &Request) -> Result<Authenticated, Refusal> {
        let mut values = request.headers().get_all(header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(Refusal::Missing);
        };
        let invalid = || Refusal::Invalid;
        let Some(token) = bearer(value) else {
            return Err(invalid());
        };
        let authenticator = self.auth.authenticator();
        let identity = match crate::adapter::contain::catch(|| authenticator.authenticate(token)) {
            Ok(Ok(identity)) => identity,
            Ok(Err(rejected)) => {
                tracing::debug!(reason = rejected.reason(), "MCP bearer token refused");
                return Err(invalid());
            }
            Err(_) => {
                tracing::warn!("the MCP authenticator panicked; the request is refused");
                return Err(invalid());
            }
        };
        let granted = |scope: &String| identity.scopes().contains(scope);
        if !self.auth.required().iter().all(granted) {
            return Err(Refusal::Scope);
        }
        let host = self.auth.host_of(&identity);
        Ok(Authenticated {
            consumer: consumer_id(&identity, &host, token),
            subject: identity.subject().to_owned(),
            host,
        })
    }

    /// A slot of `subject`'s share of the requests in flight (all its
    /// credentials together), held until its response ends; `None` when
    /// the share is taken.
    fn slot(&self, subject: &str) -> Option<OwnedSemaphorePermit> {
        let mut table = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if table.len() >= self.max_in_flight_entries && !table.contains_key(subject) {
            // Idle identities (no permit out) go.
            table.retain(|_, slots| Arc::strong_count(slots) > 1);
        }
        let slots = table
            .entry(subject.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.max_in_flight_per_identity)));
        Arc::clone(slots).try_acquire_owned().ok()
    }

    fn owner(&self, session: &str) -> Option<String> {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .get(session)
            .map(|(consumer, _)| consumer.clone())
    }

    async fn bind(&self, session: String, consumer: String) {
        // The owners of ended sessions go first (a share counts live ones);
        // those bound since the sessions were read stay.
        let before = self.owners.lock().unwrap_or_else(PoisonError::into_inner).1;
        let held: Vec<SessionId> = self
            .sessions
            .sessions
            .read()
            .await
            .keys()
            .cloned()
            .collect();
        let held: rustc_hash::FxHashSet<&str> = held.iter().map(|id| &**id).collect();
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .retain(|session, (_, opened)| *opened > before || held.contains(session.as_str()));
        let surplus = {
            let mut guard = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
            let (owners, clock) = &mut *guard;
            *clock += 1;
            owners.insert(session, (consumer.clone(), *clock));
            let mut own: Vec<(u64, String)> = owners
                .iter()
                .filter(|(_, (owner, _))| *owner == consumer)
                .map(|(session, (_, opened))| (*opened, session.clone()))
                .collect();
            let over = own.len().saturating_sub(self.max_sessions_per_identity);
            own.sort_unstable();
            own.truncate(over);
            for (_, session) in &own {
                owners.remove(session);
            }
            own
        };
        // The identity's oldest sessions beyond its share end.
        for (_, session) in surplus {
            let _ = self.sessions.close_session(&SessionId::from(session)).await;
        }
    }

    fn unbind(&self, session: &str) {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .remove(session);
    }
}

/// Why a request was refused; the value indexes the challenges.
#[derive(Clone, Copy)]
enum Refusal {
    /// No credential (`401`).
    Missing = 0,
    /// A credential the authenticator refused (`401 invalid_token`).
    Invalid = 1,
    /// A valid credential short of a required scope (`403`).
    Scope = 2,
}

const UNAUTHORIZED: &str = "Unauthorized: a valid bearer token for this resource is required";
const FORBIDDEN: &str = "Forbidden: the token does not grant the scope this resource requires";

/// The token of an `Authorization: Bearer …` value.
fn bearer(value: &HeaderValue) -> Option<&str> {
    let value = value.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer")
        && !token.is_empty()
        && token.len() <= MAX_TOKEN_BYTES
        && !token.contains(char::is_whitespace))
    .then_some(token)
}

/// `auth-<subject>-<fingerprint>`: one consumer per subject, scopes and
/// host context, so two credentials of one subject granting different
/// things never share a view, a session, dedupe records or a host context
/// — even when the host's [mapping](ResourceServer::host_context) keeps
/// the scopes out of the context's JSON. Typed extensions cannot be
/// fingerprinted: a context holding any is told apart by the credential
/// itself (each token its own consumer; a refreshed token starts a new
/// session). The fingerprint is 128 bits: a subject chosen to collide with
/// another's is no shortcut.
fn consumer_id(identity: &Identity, host: &HostContext, token: &str) -> String {
    let json = |host: &HostContext| serde_json::Value::Object(host.values().clone()).to_string();
    let mut digest = Sha256::new();
    for part in [
        identity.subject().to_owned(),
        serde_json::json!(identity.scopes()).to_string(),
        json(identity.host()),
        json(host),
        if identity.host().has_extensions() || host.has_extensions() {
            format!("credential:{token}")
        } else {
            String::new()
        },
    ] {
        // Length-prefixed: no two sequences of parts hash alike.
        digest.update((part.len() as u64).to_be_bytes());
        digest.update(part.as_bytes());
    }
    let fingerprint: String = digest
        .finalize()
        .iter()
        .take(16)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let subject: String = identity
        .subject()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
        .take(MAX_SUBJECT_CHARS)
        .collect();
    format!("auth-{subject}-{fingerprint}")
}

/// The gate: `request` refused (a bearer challenge, or the same `404` as
/// any session not held), or answered by `next` as its identity.
pub(crate) async fn auth_gate(
    gate: &AuthGate,
    mut request: Request,
    next: impl Onward,
) -> Response {
    if let Some(origin) = &gate.origin
        && let Some(refused) = origin.refuse_request(&request)
    {
        return refused;
    }
    let authenticated = match gate.authenticate(&request) {
        Ok(authenticated) => authenticated,
        Err(refusal) => return gate.refuse(refusal),
    };
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(session) = &session
        && gate.owner(session).as_deref() != Some(authenticated.consumer.as_str())
    {
        // Another identity's session is no session of this caller's.
        return plain(StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
    }
    let consumer = authenticated.consumer.clone();
    // The share is the subject's: its credentials together hold one.
    let Some(slot) = gate.slot(&authenticated.subject) else {
        return crate::mcp::http_gate::busy(
            None,
            crate::error::RateLimitReason::QueueFull,
            "Server busy: too many requests or streams in flight for this subject; retry later \
             or close a stream",
        );
    };
    let method = request.method().clone();
    request.extensions_mut().insert(authenticated);
    let response = next.run(request).await;
    match (&session, method) {
        (None, Method::POST) => {
            if let Some(opened) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|value| value.to_str().ok())
            {
                gate.bind(opened.to_owned(), consumer).await;
            }
        }
        (Some(session), Method::DELETE) if response.status().is_success() => gate.unbind(session),
        _ => {}
    }
    let (parts, body) = response.into_parts();
    Response::from_parts(
        parts,
        axum::body::Body::new(crate::mcp::held::Held::new(body, slot)),
    )
}
