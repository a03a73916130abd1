//! The HTTP gate in front of the streamable HTTP transport: what every
//! request passes before a session or handler sees it.
//!
//! - **Host and Origin** (every verb): a `Host` outside the allowed hosts
//!   or an `Origin` outside the allowed origins is `403` (DNS rebinding, a
//!   hostile web page). A request without `Origin` (not from a browser)
//!   passes.
//! - **Body** (`POST`): read within the read timeout (`408` otherwise, and
//!   the connection closes) and at most the body limit (`413`); a body that
//!   is not one JSON-RPC message is `400` (parse error or invalid request).
//!   The gate reads the body in one pass (`peek`) and leaves
//!   the parse into a message to the transport (whose refusal it answers
//!   as its own); only `initialize`, or a body that is not one JSON
//!   object, is parsed here.
//! - **Agent-chosen ids**: a JSON-RPC id longer than `max_id_bytes` is
//!   `400` with an `INVALID_INPUT` payload, before anything keeps it; a
//!   request under an id the session has in flight is `400` (`-32600`
//!   under that id), see `in_flight`.
//! - **Sessions**: `initialize` opens a session only below the session cap
//!   (`503` with a `RATE_LIMITED` payload and `Retry-After` otherwise);
//!   `initialize` on an existing session is `400`; `DELETE` of a session
//!   the server does not hold is `404`, of one it holds `200` (the session
//!   ends).
//! - **A share of the connections**: at most three quarters of the
//!   connection limit of requests are in flight at once, each held until
//!   its response ends (an SSE or listen stream holds one while it lasts);
//!   beyond that a request is `503` with a `RATE_LIMITED` payload and
//!   `Retry-After`, so streams can never take every connection the pages
//!   served beside `/mcp` need. Within that share, one session holds at
//!   most half, and the streams together (`GET`, `subscriptions/listen`)
//!   at most half (the same `503`), see `in_flight`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderMap, Method, StatusCode, header};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId};
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};

use super::in_flight::{Claim, Entry, InFlight, Refused};
use super::origin::OriginGate;
use super::plain::plain;
use super::unreadable::Unreadable;
use crate::adapter::bounds;
use crate::error::ErrorPayload;

/// The session header of the streamable HTTP transport.
pub(super) const SESSION_HEADER: &str = "mcp-session-id";

/// The transport's own text for a session it does not hold: every `404`
/// of the endpoint says this, so none tells which check refused.
pub(super) const SESSION_NOT_FOUND: &str = "Not Found: Session not found";

/// How long a refused `initialize` is told to wait.
const SESSIONS_FULL_RETRY: Duration = Duration::from_secs(5);

/// The gate's settings and the sessions it counts.
pub(super) struct Gate {
    /// `None` where the origin was checked before the gate.
    pub(super) origin: Option<OriginGate>,
    pub(super) sessions: Arc<LocalSessionManager>,
    pub(super) max_sessions: usize,
    pub(super) read_timeout: Duration,
    pub(super) max_body_bytes: usize,
    pub(super) max_id_bytes: usize,
    /// Serializes session admission, so concurrent `initialize`s cannot
    /// pass the cap together.
    pub(super) admission: tokio::sync::Mutex<()>,
    /// The endpoint's share of the listener's connections.
    pub(super) in_flight: Arc<tokio::sync::Semaphore>,
    /// What each session and the streams hold of the in-flight places,
    /// and the ids of each session's requests.
    pub(super) ids: Arc<InFlight>,
}

/// The share of the connection limit `/mcp` requests may hold at once.
pub(super) fn mcp_share(max_connections: usize) -> usize {
    (max_connections.max(1) * 3 / 4).max(1)
}

/// Where a gate sends a request it lets pass: the next gate, or the
/// transport. Run at most once.
pub(super) trait Onward: Send {
    /// Answers `request`.
    fn run(self, request: Request) -> impl Future<Output = Response> + Send;
}

impl<F, A> Onward for F
where
    F: FnOnce(Request) -> A + Send,
    A: Future<Output = Response> + Send,
{
    fn run(self, request: Request) -> impl Future<Output = Response> + Send {
        self(request)
    }
}

/// The gate: `request` refused, or answered by `next`. Its refusals and
/// the transport's are plain text here; the route makes them JSON-RPC
/// errors ([`as_json_rpc`]).
pub(super) async fn gate(gate: &Gate, request: Request, next: impl Onward) -> Response {
    if let Some(origin) = &gate.origin
        && let Some(refused) = origin.refuse_request(&request)
    {
        return refused;
    }
    // A share of the connections is taken for work only once the request
    // is whole: a client trickling its body holds nothing of it.
    let request = if *request.method() == Method::POST && is_json(&request) {
        match whole(gate, request).await {
            Ok(request) => request,
            Err(refused) => return refused,
        }
    } else {
        request
    };
    let Ok(permit) = Arc::clone(&gate.in_flight).try_acquire_owned() else {
        return busy(
            None,
            crate::error::RateLimitReason::QueueFull,
            "Server busy: too many requests or streams in flight; retry later or close a stream",
        );
    };
    let response = admitted(gate, request, next).await;
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(super::held::Held::new(body, permit)))
}

/// `503` with a `RATE_LIMITED` payload of `reason` and `Retry-After`: the
/// server is full (sessions, or its share of connections).
pub(in crate::mcp) fn busy(
    id: Option<Value>,
    reason: crate::error::RateLimitReason,
    message: &'static str,
) -> Response {
    let retry_ms = crate::adapter::millis(SESSIONS_FULL_RETRY);
    let payload = serde_json::to_value(ErrorPayload::rate_limited(reason, Some(retry_ms))).ok();
    let mut response = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        -32000,
        message,
        payload,
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        http::HeaderValue::from(SESSIONS_FULL_RETRY.as_secs()),
    );
    response
}

/// A request inside the endpoint's share: verb by verb.
async fn admitted(gate: &Gate, request: Request, next: impl Onward) -> Response {
    match *request.method() {
        Method::POST => post(gate, request, next).await,
        Method::DELETE => {
            if let Some(session) = session_of(request.headers())
                && !holds(&gate.sessions, &session).await
            {
                return plain(StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
            }
            let mut response = next.run(request).await;
            // The session is ended: `200`, as the official SDKs' servers
            // answer and their clients expect (the transport says `202`,
            // which the Python client logs as a failed termination).
            if response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::OK;
            }
            response
        }
        Method::GET => {
            // An event stream, counted against its session's share and the
            // streams' share while it lasts.
            let entry = Entry {
                session: session_of(request.headers()),
                id: None,
                stream: true,
            };
            match gate.ids.enter(entry) {
                Ok(claim) => holding(next.run(request).await, claim),
                Err(refused) => refusal(&refused, None),
            }
        }
        _ => next.run(request).await,
    }
}

/// `response`, holding `claim` until its body ends.
fn holding(response: Response, claim: Claim) -> Response {
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(super::held::Held::new(body, claim)))
}

/// The answer to a request the in-flight table refused (`id` its JSON-RPC
/// id, echoed).
fn refusal(refused: &Refused, id: Option<Value>) -> Response {
    match refused {
        Refused::IdInFlight => rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            -32600,
            "Invalid Request: a request with this id is still in flight in this session; \
             give every request an id of its own",
            None,
        ),
        Refused::SessionFull => busy(
            id,
            crate::error::RateLimitReason::QueueFull,
            "Server busy: this session holds its share of the requests and streams in flight; \
             wait for one to end or close a stream",
        ),
        Refused::StreamsFull => busy(
            id,
            crate::error::RateLimitReason::QueueFull,
            "Server busy: the streams hold their share of the server; retry later or close a stream",
        ),
    }
}

/// Whether `request` says its body is JSON.
fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
        })
}

/// `request` with its whole body read (within the read timeout and the
/// body limit), or the refusal: `408` (the connection closes) or `413`.
#[allow(clippy::result_large_err)]
async fn whole(gate: &Gate, request: Request) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(
        gate.read_timeout,
        axum::body::to_bytes(body, gate.max_body_bytes),
    )
    .await;
    let bytes = match read {
        Err(_) => return Err(super::plain::too_slow()),
        Ok(Err(_)) => return Err(super::plain::too_large()),
        Ok(Ok(bytes)) => bytes,
    };
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

async fn post(gate: &Gate, request: Request, next: impl Onward) -> Response {
    if !is_json(&request) {
        // The transport answers 415 without reading the body.
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // Read whole by the gate already: at once.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return not_one_message();
    };
    // One pass over the body decides everything but `initialize`; the
    // transport then parses it into a message, once.
    if let Some(peek) = super::peek::peek(&bytes)
        && !peek.initialize
    {
        if peek
            .string_id_len()
            .is_some_and(|len| len > gate.max_id_bytes)
        {
            return id_too_long(gate.max_id_bytes);
        }
        // Counted against its session's share (and the streams' share, for
        // a listen stream) until its response ends; a request's id is held
        // in its session as long.
        let entry = Entry {
            session: session_of(&parts.headers),
            id: peek.id.filter(|_| peek.method),
            stream: peek.listen,
        };
        let echoed = entry.id.as_ref().map(id_value);
        let claim = match gate.ids.enter(entry) {
            Ok(claim) => claim,
            Err(refused) => return refusal(&refused, echoed),
        };
        let response = next
            .run(Request::from_parts(parts, Body::from(bytes.clone())))
            .await;
        // The content type was checked above, so a 415 is the transport's
        // refusal of the body as a message: answered as the gate would.
        // (A body our parse accepts but the transport's refuses, such as
        // duplicate keys, is still not one message: the same 400.)
        if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            return unreadable_refusal(&bytes);
        }
        // The transport's session checks, under the request's own id.
        return holding(as_json_rpc(response, echoed).await, claim);
    }
    let message = match message_of(&bytes, gate.max_id_bytes) {
        Ok(message) => message,
        Err(refusal) => return refusal,
    };
    let request = Request::from_parts(parts, Body::from(bytes.clone()));
    let ClientJsonRpcMessage::Request(rpc) = &message else {
        return run_parsed(next, request, &bytes).await;
    };
    if !matches!(rpc.request, ClientRequest::InitializeRequest(_)) {
        return run_parsed(next, request, &bytes).await;
    }
    let id = id_value(&rpc.id);
    if let Some(session) = session_of(request.headers()) {
        // Under a session the server does not hold: not found, the same
        // bytes as any request under it (the client starts over without
        // the header).
        if !holds(&gate.sessions, &session).await {
            return plain(StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
        }
        return rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id),
            -32600,
            "Invalid Request: this session is already initialized",
            None,
        );
    }
    let _admission = gate.admission.lock().await;
    if gate.sessions.sessions.read().await.len() >= gate.max_sessions {
        return busy(
            Some(id),
            crate::error::RateLimitReason::SessionsFull,
            "Server busy: too many open sessions; retry later or end an unused session",
        );
    }
    // Held until the session is registered (the response is built after).
    run_parsed(next, request, &bytes).await
}

/// Runs a request whose body (`bytes`) the gate read as one message. A
/// `415` then is the transport's refusal of a body the gate's parse
/// accepted (duplicate keys, which `serde_json`'s value keeps the last
/// of): named as the gate names any body the transport cannot read.
async fn run_parsed(next: impl Onward, request: Request, bytes: &[u8]) -> Response {
    let response = next.run(request).await;
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return unreadable_refusal(bytes);
    }
    response
}

/// `bytes` as one JSON-RPC message, or the gate's refusal: `400` with an
/// id over `max_id_bytes` (checked first), or [`unreadable_refusal`].
#[allow(clippy::result_large_err)]
fn message_of(bytes: &[u8], max_id_bytes: usize) -> Result<ClientJsonRpcMessage, Response> {
    let value = serde_json::from_slice::<Value>(bytes).ok();
    if let Some(Value::String(id)) = value.as_ref().and_then(|value| value.get("id"))
        && id.len() > max_id_bytes
    {
        return Err(id_too_long(max_id_bytes));
    }
    value
        .and_then(|value| serde_json::from_value::<ClientJsonRpcMessage>(value).ok())
        .ok_or_else(|| unreadable_refusal(bytes))
}

/// The `400` for a body that is not one message the transport reads, named
/// as the line transport names it: a method no server takes (`-32601`),
/// params its method does not take or JSON `serde_json` cannot read
/// (`-32602`), no one request at all (`-32600`), under the id as the
/// client wrote it where one can be carried back; no JSON object at all
/// is the parse error (`-32700`).
fn unreadable_refusal(bytes: &[u8]) -> Response {
    match super::unreadable::unreadable(bytes) {
        Unreadable::Request { id, fault } => rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id).filter(|id| !id.is_null()),
            i64::from(fault.code()),
            fault.message(),
            None,
        ),
        Unreadable::NotJson => {
            rpc_error(StatusCode::BAD_REQUEST, None, -32700, "Parse error", None)
        }
        Unreadable::Notification | Unreadable::Batch => not_one_message(),
    }
}

/// The longest plain-text refusal carried into a JSON-RPC error.
const MAX_REFUSAL_TEXT: usize = 1024;

/// `response` as a JSON-RPC error when it is a plain-text refusal (the
/// transport's session and `Accept` checks, the gate's own size and time
/// limits): the same status and text, under `id` when the request's is
/// known. Anything else, and a bearer challenge, is passed on untouched.
pub(super) async fn as_json_rpc(response: Response, id: Option<Value>) -> Response {
    let status = response.status();
    // The transport's refusals carry no content type; the gate's are
    // `text/plain`.
    let plain_text = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_none_or(|value| value.as_bytes().starts_with(b"text/plain"));
    // A bearer challenge (`401`, `403` with `WWW-Authenticate`) stays as
    // OAuth clients read it: the header is the answer, not a body.
    let challenge = response.headers().contains_key(header::WWW_AUTHENTICATE);
    if !(status.is_client_error() || status.is_server_error()) || !plain_text || challenge {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_REFUSAL_TEXT)
        .await
        .unwrap_or_default();
    let text = std::str::from_utf8(&bytes)
        .ok()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("Refused"));
    // -32001 is the SDKs' "session not found"; -32600 a request that is
    // wrong as sent; -32000 the server's refusal.
    let code = match status {
        StatusCode::NOT_FOUND => -32001,
        StatusCode::BAD_REQUEST => -32600,
        _ => -32000,
    };
    // Every session not found is the same bytes, whoever refused it (the
    // transport, the gate, or the credential check of a session another
    // credential opened): no id, so none of them tells which it was.
    let id = id.filter(|_| status != StatusCode::NOT_FOUND);
    let body = json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code, "message": text},
    });
    parts.headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body.to_string()))
}

/// `400`: the body is not one JSON-RPC message (no id is echoed: which of
/// its ids would be is ambiguous).
fn not_one_message() -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        None,
        -32600,
        "Invalid Request: not one JSON-RPC message",
        None,
    )
}

/// `400` with an `INVALID_INPUT` payload: the id is over `max_id_bytes`.
fn id_too_long(max_id_bytes: usize) -> Response {
    let issue = bounds::id_too_long("/id", max_id_bytes);
    let payload = serde_json::to_value(ErrorPayload::invalid_input(&[issue])).ok();
    rpc_error(
        StatusCode::BAD_REQUEST,
        None,
        -32600,
        "Invalid Request: the id is too long",
        payload,
    )
}

fn session_of(headers: &HeaderMap) -> Option<SessionId> {
    headers
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(|value| SessionId::from(value.to_owned()))
}

fn id_value(id: &RequestId) -> Value {
    serde_json::to_value(id).unwrap_or(Value::Null)
}

/// Whether the transport holds session `id` now.
async fn holds(sessions: &LocalSessionManager, id: &SessionId) -> bool {
    sessions.sessions.read().await.contains_key(id)
}

fn rpc_error(
    status: StatusCode,
    id: Option<Value>,
    code: i64,
    message: &'static str,
    data: Option<Value>,
) -> Response {
    let mut error = json!({"code": code, "message": message});
    if let (Some(data), Some(error)) = (data, error.as_object_mut()) {
        error.insert("data".to_owned(), data);
    }
    let body = json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": error});
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
