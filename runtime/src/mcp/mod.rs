//! The MCP server adapter (feature `mcp-server`, or `mcp`): serve a
//! registry to any MCP client over stdio or streamable HTTP.
//!
//! - **Tools**: one per *available* capability and procedure reference, as
//!   the embedded toolset names and describes them (wire names, the
//!   authoritative name map, descriptions without live state), with
//!   annotations derived from effects: read-only for observations and
//!   server queries, destructive, idempotent, open-world for external side
//!   effects.
//! - **Live catalog**: `tools/list` reflects the surface at the moment of
//!   the call; `notifications/tools/list_changed` follows every change to
//!   the surface or to availability — pushed to handshake-era sessions, and
//!   streamed to 2026-07-28 clients through `subscriptions/listen`. A
//!   change made after the `initialize` response or the listen
//!   acknowledgment is always notified. A call re-evaluates its caller's
//!   tools only: another session sees live-state changes (what `when`
//!   reads) on its next list or call, or at once after
//!   [`McpServer::refresh`]; surface mutations reach every session.
//! - **Results**: an ok call is structured content with the output; a
//!   capability error is an `isError` result carrying the exact payload
//!   (`code`, `message`, `retry`, `details`); unknown tool names are the
//!   protocol's invalid-params error, as are `arguments` that are not an
//!   object. On session transports the JSON-RPC request id becomes the
//!   invocation id, so transport retries are deduplicated. A client's
//!   `notifications/cancelled` cancels the invocation (it settles
//!   `CANCELLED` and the handler's cancellation token fires).
//! - **Confirmations**: two-phase by default — the model calls again with
//!   the same arguments once the user approved, or passes
//!   `_meta["agentSurface/confirmationId"]` (a stateless HTTP caller, whose
//!   every request is a new consumer, passes the id); the person answers
//!   in the application (an in-app channel, or host code through
//!   `Registry::confirmations`). When the host opted into elicitation
//!   ([`McpServerBuilder::elicitation`]: off unless it says so) and the
//!   client declares support,
//!   the server asks the human through MCP elicitation (a server request on
//!   handshake-era sessions, an input-required round on 2026-07-28, whose
//!   state is a fresh secret bound to its caller), showing the summary and
//!   the exact effective input, and returns the final result in the same
//!   call. The client's answer resolves only its own requests, recorded as
//!   channel [`ELICITATION_CHANNEL`]. A denial is never retried.
//! - **Identity** (see `identity`): each session is its own consumer,
//!   issued by the server and forgotten with the session (its dedupe
//!   records, open confirmations and view). The 2026-07-28 HTTP protocol has
//!   no sessions: give the server an [`identify`](McpServerBuilder::identify)
//!   hook (e.g. from the authenticated principal); without one, every
//!   stateless request is its own consumer — a session header it carries is
//!   ignored — and a confirmation it was asked for can be presented later by
//!   id.
//! - **Authorization** (see [`auth`]): with
//!   [`auth`](McpServerBuilder::auth), HTTP is an OAuth 2.1 protected
//!   resource — bearer tokens (static or JWT) become per-credential
//!   identities with their own host context, `401`/`403` challenges name
//!   the Protected Resource Metadata, and sessions are bound to the
//!   credential that opened them. Without it, HTTP is for loopback.
//! - **HTTP** (see `endpoint` and `http_gate`): loopback origins and hosts by
//!   default (`403` otherwise, every verb), a session cap with a typed
//!   refusal, idle expiry, a body limit, read timeouts and a connection
//!   limit; a second `initialize` is refused, a malformed body is `400`, a
//!   `DELETE` of an unknown session `404`. JSON-RPC ids over
//!   `Limits::max_id_bytes` never become invocation ids.
//! - **Request ids**: a request under an id its client (its session,
//!   over HTTP) has in flight is refused with `-32600`. The transports
//!   hand rmcp every request under an id of their own, so the late answer
//!   of a request the client cancelled or stopped reading is nobody's: it
//!   never reaches a new request sent under the same id. The server's own
//!   requests (elicitation) have numbers for ids, and an answer under a
//!   string (`"0"` for `0`) answers none of them.
//!
//! ```no_run
//! use agent_surface::mcp::McpServer;
//! use agent_surface::Registry;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::default();
//! // … mount components …
//! let server = McpServer::builder(&registry).name("my-app").build();
//! server.serve_stdio().await?; // until the client disconnects
//! # Ok(())
//! # }
//! ```
#![doc = include_str!("../../docs/mcp.md")]

mod approval_url;
pub mod auth;
mod caller;
mod clients;
mod connections;
mod convert;
mod echo;
mod elicit;
mod endpoint;
mod held;
mod http_gate;
mod http_sessions;
mod in_flight;
mod lines;
mod origin;
mod own_ids;
mod peek;
mod placed_io;
mod plain;
mod round;
mod route;
mod session;
mod tools_call;
mod unreadable;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::ServiceExt;
use rmcp::service::RunningService;

use crate::adapter::Lru;
use crate::adapter::{CallActivity, ConsumerView, ConsumerViews, Mark, Topology};
use crate::context::ConsumerKind;
use crate::registry::Registry;

pub use clients::ConnectedClient;
pub use endpoint::HttpServer;
pub use origin::OriginGate;
pub use session::McpSession;

use endpoint::HttpOptions;

/// The request `_meta` key by which a client passes confirmation evidence.
pub const CONFIRMATION_META: &str = "agentSurface/confirmationId";

/// The request `_meta` key by which a client names a call's attempt
/// itself (a string): a retry with the same key, by the same identity, is
/// the same attempt — it joins the running call or gets its settled result,
/// and never runs again, on whichever replica sharing a
/// [store](crate::store) it lands. This is how a sessionless (2026-07-28)
/// caller, whose JSON-RPC ids number nothing beyond one request, makes a
/// retry after a timeout safe; without it such calls are not deduplicated.
pub const INVOCATION_META: &str = "agentSurface/invocationId";

/// The input-request key of a confirmation elicitation (2026-07-28).
const CONFIRM_KEY: &str = "agentSurface/confirm";

/// The principal every identity the server mints itself (sessions,
/// stateless callers) acts for
/// ([`Consumer::principal`](crate::context::Consumer::principal)): together
/// they are one party for fair shares — pending confirmations, rate limits,
/// observation admission — however many of them there are. Authenticated
/// identities act for `mcp-principal:<subject>`; an
/// [`identify`](McpServerBuilder::identify) answer acts for itself.
pub const UNAUTHENTICATED_PRINCIPAL: &str = "mcp-unauthenticated";

type Identify = Arc<dyn Fn(&http::request::Parts) -> Option<String> + Send + Sync>;

/// Why serving failed; [`source`](std::error::Error::source) is the
/// underlying error (the io error of a failed listen, the transport's).
#[derive(Debug)]
pub struct McpServeError {
    message: String,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl McpServeError {
    pub(crate) fn new(
        message: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> McpServeError {
        McpServeError {
            message: message.into(),
            source: source.into(),
        }
    }
}

/// The message and its cause, so a plain `{err}` says what went wrong.
impl fmt::Display for McpServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.message, self.source)
    }
}

impl std::error::Error for McpServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// Builds an [`McpServer`].
#[must_use]
pub struct McpServerBuilder {
    registry: Registry,
    name: String,
    version: String,
    instructions: Option<String>,
    elicitation: Option<bool>,
    approval_page: Option<approval_url::ApprovalPage>,
    identify: Option<Identify>,
    auth: Option<auth::ResourceServer>,
    http: HttpOptions,
}

impl fmt::Debug for McpServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerBuilder")
            .field("name", &self.name)
            .field("elicitation", &self.elicitation)
            .finish_non_exhaustive()
    }
}

impl McpServerBuilder {
    /// The server name clients show (default `agent-surface`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The server version (default: this crate's).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Instructions for the model, sent at connection.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Whether the client's MCP elicitation is an approval channel: when
    /// the client supports it, the server asks through it and the client's
    /// answer resolves the confirmation (channel [`ELICITATION_CHANNEL`],
    /// kind agent-connection, approver the client's name).
    ///
    /// **Trust assumption:** the client shows the request to its person and
    /// never answers for them — true of a desktop client with a person at
    /// it, not of an autonomous agent, which could then approve its own
    /// requests. Enable it only for such clients. An answer resolves only
    /// the one request it was asked about, for the caller it was asked of:
    /// a session's or a principal's own requests. A stateless caller
    /// without an identity (2026-07-28) is asked too: its input request
    /// carries a fresh, unguessable `requestState` (never the confirmation
    /// id), and only a retry presenting that state answers, as the caller
    /// it was issued to.
    ///
    /// Default: off — an agent's own connection answers nothing unless the
    /// host says its client is one that asks its person. Off, confirmations
    /// are two-phase: the agent calls again once the person approved in the
    /// application (an in-app channel the registry declares,
    /// [`RegistryBuilder::approval_channel`](crate::registry::RegistryBuilder::approval_channel),
    /// or host code answering through
    /// [`Registry::confirmations`](crate::registry::Registry::confirmations)).
    /// A registry with an in-app channel usually keeps it off: the person
    /// approves where they see the application.
    pub fn elicitation(mut self, enabled: bool) -> Self {
        self.elicitation = Some(enabled);
        self
    }

    /// The application's own approval page for a request, for a person far
    /// from the application (a remote agent's person): `page` returns its
    /// URL for a pending confirmation — single use, short-lived,
    /// unguessable, bound to the request's digest, and granting nothing
    /// without the person's own session and proof on that page. Runs
    /// contained, outside every lock; `None` (or a URL over 2 KiB) gives no
    /// link.
    ///
    /// With it, every `CONFIRMATION_REQUIRED` carries the link in
    /// `details.approvalUrl` for any client to show its person, and a
    /// client that declares `elicitation.url` (MCP 2025-11-25) is sent it as
    /// a URL-mode elicitation: its call is held while the person answers on
    /// the page, `notifications/elicitation/complete` follows, and the call
    /// runs once. The client's own answer to the elicitation approves
    /// nothing: it is not an approval channel, so no opt-in
    /// ([`elicitation`](Self::elicitation)) is needed.
    pub fn approval_page(
        mut self,
        page: impl Fn(&crate::confirmation::PendingConfirmation) -> Option<String>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.approval_page = Some(Arc::new(page));
        self
    }

    /// Derives a stable consumer id from an HTTP request (the authenticated
    /// principal, a client certificate…). `None` falls back to the session.
    pub fn identify(
        mut self,
        identify: impl Fn(&http::request::Parts) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.identify = Some(Arc::new(identify));
        self
    }

    /// Authenticates every HTTP request as an OAuth 2.1 protected resource
    /// (see [`auth`]): a bearer token is required (`401` with the
    /// metadata's address otherwise), becomes the request's identity — its
    /// own consumer, evaluated with its own host context — and binds the
    /// sessions it opens. The metadata is served at
    /// `/.well-known/oauth-protected-resource` by
    /// [`serve_http`](McpServer::serve_http) and
    /// [`serve_with`](McpServer::serve_with). Takes precedence over
    /// [`identify`](Self::identify) on HTTP; stdio is unaffected.
    pub fn auth(mut self, auth: auth::ResourceServer) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Browser origins allowed to reach the HTTP endpoint (default: the
    /// loopback origins `http(s)://localhost`, `127.0.0.1` and `[::1]` on
    /// any port). Entries are `scheme://host` (the scheme's default port),
    /// `scheme://host:port`, `scheme://host:*` (any port) or `null`. A
    /// request whose `Origin` is not listed is `403`; one without `Origin`
    /// (not from a browser) passes.
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.http.origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// `Host` values the HTTP endpoint answers (default `localhost`,
    /// `127.0.0.1`, `::1`, any port): add the public name when a reverse
    /// proxy forwards it. Others are `403` (DNS rebinding).
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.http.hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// HTTP sessions open at once (default 64); beyond it `initialize` is
    /// refused with `503` and a `RATE_LIMITED` payload.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.http.max_sessions = max;
        self
    }

    /// How long an HTTP session lives without a request (default 10
    /// minutes); then it ends, its records are forgotten, and the client
    /// initializes again.
    pub fn session_idle_timeout(mut self, idle: Duration) -> Self {
        self.http.session_idle = idle;
        self
    }

    /// Connections served at once by [`McpServer::serve_http`] (default
    /// 256). At the cap a newcomer takes the place of the connection idle
    /// longest, else of an upload below the minimum pace; it waits only
    /// while every connection does work at a fair pace.
    ///
    /// `/mcp` requests hold at most three quarters of them at once (the
    /// rest are for pages served beside it); of those, one session at most
    /// half, and open streams (`GET` event streams, `subscriptions/listen`)
    /// at most half. A server for many clients that each hold a stream
    /// needs about three connections per client.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.http.max_connections = max;
        self
    }

    /// How long a client may take to send a request's headers, and then its
    /// body (default 15 seconds each; a body must also keep a pace of 2 KiB/s
    /// after its first second); an idle keep-alive connection closes after
    /// the same time.
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.http.read_timeout = timeout;
        self
    }

    /// The largest HTTP request body (default 1 MiB); larger is `413`.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.http.max_body_bytes = bytes;
        self
    }

    /// Builds the server. Each consumer's toolset follows the registry's
    /// surface; calls re-evaluate availability read from live state.
    pub fn build(self) -> McpServer {
        let limits = self.registry.limits();
        let issued = Lru::new(
            limits.max_pending_confirmations_per_consumer.max(1),
            crate::adapter::millis(limits.confirmation_ttl),
        );
        // Opt-in only: a client that answers its own elicitation (an
        // autonomous agent) must never approve by default.
        let elicitation = self.elicitation.unwrap_or(false);
        if !elicitation && !self.registry.confirmations().has_in_app_channel() {
            tracing::info!(
                "MCP elicitation is off and the registry declares no in-app approval channel: \
                 confirmations are answered only by host code through Registry::confirmations \
                 (McpServerBuilder::elicitation(true) opts in a client that asks its person)"
            );
        }
        // Sessions and stateless callers are identities the server mints:
        // together they are one party, however many of them there are.
        let views = ConsumerViews::new(&self.registry, ConsumerKind::Mcp, Topology::Remote)
            .group_unnamed(UNAUTHENTICATED_PRINCIPAL);
        let shared = Arc::new(Shared {
            registry: self.registry,
            name: self.name,
            version: self.version,
            instructions: self.instructions,
            elicitation,
            approval_page: self.approval_page,
            identify: self.identify,
            auth: self.auth,
            views,
            activity: CallActivity::default(),
            elicitations: Mutex::new(Lru::new(256, crate::adapter::millis(round::ROUND_TTL))),
            issued: Mutex::new(issued),
            next_session: AtomicU64::new(1),
            in_flight: Arc::new(in_flight::InFlight::new(http_gate::mcp_share(
                self.http.max_connections,
            ))),
            http: self.http,
        });
        McpServer { shared }
    }
}

/// What an input-required round remembers (the request state a client
/// echoes is untrusted: it only names this record).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct PendingElicitation {
    /// The confirmation asked about.
    confirmation_id: String,
    consumer: String,
    /// Whether `consumer` is an anonymous stateless caller's (whose only
    /// credential is the secret state).
    anonymous: bool,
    tool: String,
    arguments: serde_json::Value,
    /// A URL-mode round: the client's answer only says whether its person
    /// opened the approval page.
    url_mode: bool,
    /// The principal whose share of the rounds it counts against.
    share: Arc<str>,
}

/// The approval channel of MCP elicitation: the requesting client's own
/// connection, which it shows to its person (an agent-connection channel).
pub const ELICITATION_CHANNEL: &str = "mcp-elicitation";

struct Shared {
    registry: Registry,
    name: String,
    version: String,
    instructions: Option<String>,
    elicitation: bool,
    approval_page: Option<approval_url::ApprovalPage>,
    identify: Option<Identify>,
    auth: Option<auth::ResourceServer>,
    views: ConsumerViews,
    activity: CallActivity,
    elicitations: Mutex<Lru<String, PendingElicitation>>,
    /// Confirmation ids asked of anonymous callers, and whom they were
    /// asked of (see `identity`).
    issued: Mutex<Lru<String, String>>,
    next_session: AtomicU64,
    /// What HTTP sessions and streams hold of the endpoint's in-flight
    /// places (shared by every HTTP service of the server).
    in_flight: Arc<in_flight::InFlight>,
    http: HttpOptions,
}

impl Shared {
    /// The view of `consumer_id`, created on first use (`None` once the
    /// registry is disposed).
    fn view(&self, consumer_id: &str, label: Option<&str>) -> Option<Arc<ConsumerView>> {
        self.views.get(consumer_id, label)
    }

    /// A new session identity: `session-<n>-<random>`.
    fn session_id(&self) -> String {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        format!("session-{n}-{}", self.registry.mint_invocation_id())
    }

    /// A new anonymous caller identity: `http-<n>-<random>`.
    fn anonymous_id(&self) -> String {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        format!("http-{n}-{}", self.registry.mint_invocation_id())
    }

    /// Now, as a moment a watcher covers from.
    fn mark(&self) -> Mark {
        Mark::now(&self.registry, &self.activity)
    }

    /// Wakes every consumer's watchers: they rebuild their own tools and
    /// notify if what they serve changed.
    fn refresh_all(&self) {
        self.activity.touch();
        for view in self.views.all() {
            view.poke();
        }
    }
}

/// The MCP server of one registry. Cheap to clone.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.shared.name)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A builder over `registry`.
    pub fn builder(registry: &Registry) -> McpServerBuilder {
        McpServerBuilder {
            registry: registry.clone(),
            name: "agent-surface".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            elicitation: None,
            approval_page: None,
            identify: None,
            auth: None,
            http: HttpOptions::default(),
        }
    }

    /// Re-evaluates availability and notifies clients whose tools changed.
    /// Call it after application state that `when` reads changed outside
    /// the calling session's own MCP calls (each session's watcher rebuilds
    /// its own tools, off the caller's path).
    pub fn refresh(&self) {
        self.shared.refresh_all();
    }

    /// A handler for one session with its own consumer identity
    /// (`mcp:session-<n>-…`).
    pub fn session(&self) -> McpSession {
        McpSession::new(&self.shared, Some(self.shared.session_id()))
    }

    /// Serves one session over any rmcp transport (a duplex stream in
    /// tests, a socket…). Returns when the session is established.
    pub async fn serve<T, E, A>(
        &self,
        transport: T,
    ) -> Result<RunningService<RoleServer, McpSession>, McpServeError>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        self.session()
            .serve(transport)
            .await
            .map_err(|err| McpServeError::new("the MCP session could not start", err))
    }

    /// Serves one session over newline-delimited JSON-RPC read from
    /// `reader` and written to `writer` (stdio, a pipe, a socket's halves).
    /// Every request is answered: one whose JSON `serde_json` cannot read
    /// (a lone UTF-16 surrogate in a string, a number beyond `f64`) gets an
    /// error under its id, a line that is no JSON the parse error, and a
    /// line over 4 MiB is discarded as it arrives and refused. A request
    /// under an id the client has in flight is refused (`-32600` under that
    /// id), as is one beyond 128 requests in flight (`-32000`,
    /// `RATE_LIMITED`) or with an id over 1 KiB. Returns when the session
    /// is established.
    pub async fn serve_lines<R, W>(
        &self,
        reader: R,
        writer: W,
    ) -> Result<RunningService<RoleServer, McpSession>, McpServeError>
    where
        R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        self.serve(lines::Lines::new(reader, writer)).await
    }

    /// Serves one session over this process's stdin/stdout until the client
    /// disconnects. Log to stderr only: stdout is the protocol.
    pub async fn serve_stdio(&self) -> Result<(), McpServeError> {
        let running = self
            .serve_lines(
                tokio::io::BufReader::new(tokio::io::stdin()),
                tokio::io::stdout(),
            )
            .await?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|err| McpServeError::new("the MCP session over stdio failed", err))
    }
}
