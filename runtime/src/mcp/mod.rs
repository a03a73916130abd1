//! The MCP server adapter (feature `mcp`): serve a registry to any MCP
//! client over stdio or streamable HTTP.
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
//!   the same arguments once the user approved (or passes
//!   `_meta["agentSurface/confirmationId"]`). When the client declares
//!   elicitation support, the server asks the human through MCP elicitation
//!   (a server request on handshake-era sessions, an input-required round on
//!   2026-07-28), showing the summary and the exact effective input, and
//!   returns the final result in the same call. A denial is never retried.
//! - **Identity**: each session is its own consumer (`mcp:<id>`). The
//!   2026-07-28 HTTP protocol has no sessions: give the server an
//!   [`identify`](McpServerBuilder::identify) hook (e.g. from the
//!   authenticated principal); without one, stateless HTTP callers share the
//!   consumer `mcp:http`, which suits a loopback server for one user.
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

mod call;
mod changes;
mod convert;
mod session;
mod view;

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::ServiceExt;
use rmcp::service::RunningService;
use tokio_util::sync::CancellationToken;

use crate::registry::Registry;
use crate::util::lru::Lru;

pub use session::McpSession;

use changes::Activity;
use view::{View, Views};

/// The request `_meta` key by which a client passes confirmation evidence.
pub const CONFIRMATION_META: &str = "agentSurface/confirmationId";

/// The input-request key of a confirmation elicitation (2026-07-28).
const CONFIRM_KEY: &str = "agentSurface/confirm";

type Identify = Arc<dyn Fn(&http::request::Parts) -> Option<String> + Send + Sync>;

/// Why serving failed.
#[derive(Debug)]
pub struct McpServeError(String);

impl fmt::Display for McpServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for McpServeError {}

/// Builds an [`McpServer`].
#[must_use]
pub struct McpServerBuilder {
    registry: Registry,
    name: String,
    version: String,
    instructions: Option<String>,
    elicitation: bool,
    identify: Option<Identify>,
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

    /// Whether to ask the human through MCP elicitation when the client
    /// supports it (default `true`); otherwise confirmations are two-phase.
    pub fn elicitation(mut self, enabled: bool) -> Self {
        self.elicitation = enabled;
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

    /// Builds the server. Each consumer's toolset follows the registry's
    /// surface; calls re-evaluate availability read from live state.
    pub fn build(self) -> McpServer {
        let shared = Arc::new(Shared {
            registry: self.registry,
            name: self.name,
            version: self.version,
            instructions: self.instructions,
            elicitation: self.elicitation,
            identify: self.identify,
            views: Views::default(),
            activity: Activity::default(),
            elicitations: Mutex::new(Lru::new(256, 600_000)),
            next_session: AtomicU64::new(1),
        });
        McpServer { shared }
    }
}

/// What an input-required round remembers (the request state a client
/// echoes is untrusted: it only names this record).
#[derive(Clone)]
struct PendingElicitation {
    consumer: String,
    tool: String,
    arguments: serde_json::Value,
}

struct Shared {
    registry: Registry,
    name: String,
    version: String,
    instructions: Option<String>,
    elicitation: bool,
    identify: Option<Identify>,
    views: Views,
    activity: Activity,
    elicitations: Mutex<Lru<String, PendingElicitation>>,
    next_session: AtomicU64,
}

impl Shared {
    /// The view of `consumer_id`, created on first use (`None` once the
    /// registry is disposed).
    fn view(&self, consumer_id: &str) -> Option<Arc<View>> {
        self.views.get(&self.registry, consumer_id, || {
            self.next_session.fetch_add(1, Ordering::Relaxed)
        })
    }

    /// Now, as a moment a watcher covers from.
    fn mark(&self) -> changes::Mark {
        changes::Mark::now(&self.registry, &self.activity)
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

/// A running HTTP server.
#[derive(Debug)]
pub struct HttpServer {
    address: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The MCP endpoint URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Stops accepting requests and ends the sessions.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
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
            elicitation: true,
            identify: None,
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
        let n = self.shared.next_session.fetch_add(1, Ordering::Relaxed);
        let id = format!(
            "session-{n}-{}",
            self.shared.registry.inner.ids.invocation_id()
        );
        McpSession::new(&self.shared, Some(id))
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
            .map_err(|err| McpServeError(err.to_string()))
    }

    /// Serves one session over this process's stdin/stdout until the client
    /// disconnects. Log to stderr only: stdout is the protocol.
    pub async fn serve_stdio(&self) -> Result<(), McpServeError> {
        let running = self.serve(rmcp::transport::stdio()).await?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|err| McpServeError(err.to_string()))
    }

    /// The streamable HTTP service (a tower service) for your own router;
    /// mount it at `/mcp`.
    pub fn http_service(
        &self,
        stop: CancellationToken,
    ) -> rmcp::transport::streamable_http_server::StreamableHttpService<
        McpSession,
        rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
    > {
        let shared = Arc::clone(&self.shared);
        rmcp::transport::streamable_http_server::StreamableHttpService::new(
            move || Ok(McpSession::new(&shared, None)),
            Arc::default(),
            rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default()
                .with_cancellation_token(stop),
        )
    }

    /// Serves streamable HTTP at `address` (use a loopback address unless
    /// you put authentication in front) on `/mcp`.
    pub async fn serve_http(&self, address: SocketAddr) -> Result<HttpServer, McpServeError> {
        let stop = CancellationToken::new();
        let router =
            axum::Router::new().nest_service("/mcp", self.http_service(stop.child_token()));
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|err| McpServeError(format!("cannot listen on {address}: {err}")))?;
        let address = listener
            .local_addr()
            .map_err(|err| McpServeError(err.to_string()))?;
        let shutdown = stop.clone();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
                .await;
            if let Err(err) = served {
                tracing::error!(%err, "the MCP HTTP server stopped");
            }
        });
        Ok(HttpServer {
            address,
            stop,
            task,
        })
    }
}
