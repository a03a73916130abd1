//! Streamable HTTP: the MCP endpoint behind the [gate](super::http_gate), served
//! with a connection limit and read timeouts.
//!
//! Defaults, all settable on the builder: loopback origins and hosts only;
//! at most 64 sessions, each ended after 10 minutes without a request (the
//! client initializes again); headers within 15 seconds, and a body within
//! 15 seconds at a pace of at least 2 KiB/s after its first second (`408`
//! otherwise); a 1 MiB body, read whole before anything routes the request
//! or takes a share of work; at most 256 connections, of which `/mcp`
//! requests and streams hold at most three quarters. At the connection
//! cap a newcomer takes the place of the connection idle longest, else of
//! the upload furthest behind that pace; it waits only while every
//! connection does work at a fair pace.
//! A live session's notification stream never ends because of other
//! traffic: its view is held by the session, not cached.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;

use super::connections::{BODY_GRACE, ConnectionState, Connections, MIN_BODY_RATE};
use super::held::Held;
use super::placed_io::PlacedIo;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::http_gate::as_json_rpc;
use super::origin::{LOOPBACK_HOSTS, LOOPBACK_ORIGINS, OriginGate};
use super::route::McpRoute;
use super::{McpServeError, McpServer};

/// The HTTP settings of a server.
#[derive(Clone, Debug)]
pub(super) struct HttpOptions {
    pub(super) origins: Vec<String>,
    pub(super) hosts: Vec<String>,
    pub(super) max_sessions: usize,
    pub(super) session_idle: Duration,
    pub(super) max_connections: usize,
    pub(super) read_timeout: Duration,
    pub(super) max_body_bytes: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            origins: LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).collect(),
            hosts: LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect(),
            max_sessions: 64,
            session_idle: Duration::from_secs(600),
            max_connections: 256,
            read_timeout: Duration::from_secs(15),
            max_body_bytes: 1 << 20,
        }
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
    /// The streamable HTTP endpoint, gated (origins, hosts, body limit and
    /// read timeout, session cap, protocol state), as an axum router to
    /// mount at `/mcp` in your own server (`Router::nest_service`). The
    /// connection limit and the header read timeout belong to the server
    /// that accepts connections: [`serve_http`](Self::serve_http) sets them;
    /// set your own when you serve the router yourself.
    pub fn http_service(&self, stop: CancellationToken) -> axum::Router {
        let route = Arc::new(McpRoute::new(self, stop, false));
        axum::Router::new().fallback(move |request: axum::extract::Request| {
            let route = Arc::clone(&route);
            async move { route.serve(request).await }
        })
    }

    /// The Protected Resource Metadata routes (RFC 9728) of a server with
    /// [`auth`](super::McpServerBuilder::auth) — empty without — to merge
    /// into your own router when you serve [`http_service`](Self::http_service)
    /// yourself ([`serve_with`](Self::serve_with) merges them).
    pub fn metadata_routes(&self) -> axum::Router {
        match &self.shared.auth {
            Some(auth) => super::auth::metadata_routes(auth),
            None => axum::Router::new(),
        }
    }

    /// The `Origin`/`Host` gate of this server's allow-lists
    /// ([`allowed_origins`](super::McpServerBuilder::allowed_origins),
    /// [`allowed_hosts`](super::McpServerBuilder::allowed_hosts)).
    pub fn origin_gate(&self) -> OriginGate {
        let options = &self.shared.http;
        OriginGate::new(&options.origins, &options.hosts)
    }

    /// Serves streamable HTTP at `address` on `/mcp` (use a loopback
    /// address unless you put authentication in front: see the module's
    /// *HTTP security model*), with the builder's connection limit and
    /// read timeouts.
    pub async fn serve_http(&self, address: SocketAddr) -> Result<HttpServer, McpServeError> {
        self.serve_with(address, axum::Router::new()).await
    }

    /// Serves `/mcp` and the application's own `routes` (a web console's
    /// pages and websocket) from one listener at `address`, all of them
    /// behind the same defences as [`serve_http`](Self::serve_http): the
    /// [`origin_gate`](Self::origin_gate) on every route and verb, the
    /// connection limit, the header read timeout (which also closes idle
    /// keep-alive connections) and the body limit. `routes` must not
    /// claim `/mcp`.
    pub async fn serve_with(
        &self,
        address: SocketAddr,
        routes: axum::Router,
    ) -> Result<HttpServer, McpServeError> {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|err| McpServeError::new(format!("cannot listen on {address}"), err))?;
        self.serve_on(listener, routes)
    }

    /// [`serve_with`](Self::serve_with) on a listener you bound (when your
    /// routes need to know the port before serving).
    pub fn serve_on(
        &self,
        listener: tokio::net::TcpListener,
        routes: axum::Router,
    ) -> Result<HttpServer, McpServeError> {
        let stop = CancellationToken::new();
        let origin = Arc::new(self.origin_gate());
        let body_limit = self.shared.http.max_body_bytes;
        let read_timeout = self.shared.http.read_timeout;
        let others = routes
            .merge(self.metadata_routes())
            .layer(axum::extract::DefaultBodyLimit::max(body_limit))
            .layer(axum::middleware::from_fn_with_state(
                (body_limit, read_timeout),
                read_body,
            ))
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&origin),
                OriginGate::layer,
            ));
        let routes = Arc::new(Routes {
            mcp: McpRoute::new(self, stop.child_token(), true),
            origin,
            body_limit,
            read_timeout,
        });
        let address = listener
            .local_addr()
            .map_err(|err| McpServeError::new("cannot read the listening address", err))?;
        let options = self.shared.http.clone();
        let task = tokio::spawn(accept(listener, routes, others, options, stop.clone()));
        Ok(HttpServer {
            address,
            stop,
            task,
        })
    }
}

/// What [`serve_on`](McpServer::serve_on) serves at `/mcp`, in front of
/// its route: the `Origin`/`Host` gate and the whole body, as in front of
/// every other route.
struct Routes {
    mcp: McpRoute,
    origin: Arc<OriginGate>,
    body_limit: usize,
    read_timeout: Duration,
}

impl Routes {
    /// Whether `path` is the MCP endpoint's (`/mcp`, or below it).
    fn is_mcp(path: &str) -> bool {
        path == "/mcp" || path.starts_with("/mcp/")
    }

    /// Answers a request to `/mcp` that came on the connection of `state`.
    /// A refusal in front of the route is a JSON-RPC error, as the
    /// route's own are.
    async fn mcp(&self, request: Request, state: &ConnectionState) -> Response {
        if let Some(refused) = self.origin.refuse_request(&request) {
            return as_json_rpc(refused, None).await;
        }
        match whole(request, self.body_limit, self.read_timeout, Some(state)).await {
            Ok(request) => self.mcp.serve(request).await,
            Err(refused) => as_json_rpc(refused, None).await,
        }
    }
}

/// [`whole`] as axum middleware, for the routes beside `/mcp`.
async fn read_body(
    axum::extract::State((limit, read_timeout)): axum::extract::State<(usize, Duration)>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let connection = request.extensions().get::<OnConnection>().cloned();
    let state = connection.as_ref().map(|OnConnection(state)| &**state);
    match whole(request, limit, read_timeout, state).await {
        Ok(request) => next.run(request).await,
        Err(refused) => refused,
    }
}

/// Reads a request's whole body before anything routes it, so no handler
/// or gate holds anything while a client trickles: over the limit
/// (declared or sent) is `413`; a body that does not keep up
/// [`MIN_BODY_RATE`] after [`BODY_GRACE`], or takes longer than the read
/// timeout in all, is `408` and the connection closes. While it arrives,
/// its connection counts as uploading (and gives way to a newcomer at the
/// connection cap once it falls behind the rate).
#[allow(clippy::result_large_err)]
async fn whole(
    request: Request,
    limit: usize,
    read_timeout: Duration,
    connection: Option<&ConnectionState>,
) -> Result<Request, Response> {
    use http_body::Body as _;

    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(super::plain::too_large());
    }
    if request.body().is_end_stream() {
        return Ok(request);
    }
    if let Some(state) = connection {
        state.uploading();
    }
    let (parts, mut body) = request.into_parts();
    let started = tokio::time::Instant::now();
    let grace_ms = crate::adapter::millis(BODY_GRACE);
    let total_ms = crate::adapter::millis(read_timeout);
    let mut bytes = Vec::with_capacity(declared.map_or(0, |n| usize::try_from(n).unwrap_or(0)));
    loop {
        // Each byte buys `1000 / MIN_BODY_RATE` ms more, up to the timeout.
        let paid = u64::try_from(bytes.len()).unwrap_or(u64::MAX) * 1000 / MIN_BODY_RATE;
        let allowed = grace_ms.saturating_add(paid).min(total_ms);
        let deadline = started + Duration::from_millis(allowed);
        let frame = tokio::time::timeout_at(
            deadline,
            std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)),
        )
        .await;
        match frame {
            Err(_) => return Err(super::plain::too_slow()),
            Ok(None) => break,
            Ok(Some(Err(_))) => {
                return Err(super::plain::plain(
                    http::StatusCode::BAD_REQUEST,
                    "Bad Request: the body could not be read",
                ));
            }
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    if bytes.len().saturating_add(data.len()) > limit {
                        return Err(super::plain::too_large());
                    }
                    if let Some(state) = connection {
                        state.received(data.len());
                    }
                    bytes.extend_from_slice(&data);
                }
            }
        }
    }
    if let Some(state) = connection {
        state.answering();
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// Accepts connections up to `max_connections` open at once — at the cap,
/// an idle or trickling connection gives way to the newcomer (see
/// [`Connections`]) — each served over HTTP/1.1 with the header read
/// timeout (which also closes a keep-alive connection idle that long),
/// until `stop`.
async fn accept(
    listener: tokio::net::TcpListener,
    routes: Arc<Routes>,
    others: axum::Router,
    options: HttpOptions,
    stop: CancellationToken,
) {
    let table = Connections::new(options.max_connections);
    let mut connections = JoinSet::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let stream = match stream {
            Ok((stream, _)) => {
                // Responses go out as written: a response's head and body
                // are separate writes, and Nagle's algorithm would hold the
                // second for the client's delayed acknowledgement (~40 ms).
                let _ = stream.set_nodelay(true);
                stream
            }
            Err(err) => {
                // Out of descriptors and the like: back off a little.
                tracing::warn!(%err, "accepting an MCP HTTP connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let place = tokio::select! {
            place = table.admit() => place,
            () = stop.cancelled() => break,
        };
        let state = Arc::clone(place.state());
        // The socket holds the place: through an upgrade too.
        let io = match PlacedIo::new(stream, place) {
            Ok(io) => io,
            Err(err) => {
                tracing::warn!(%err, "an accepted MCP HTTP connection could not be set up");
                continue;
            }
        };
        let service = Tracked {
            routes: Arc::clone(&routes),
            others: TowerToHyperService::new(others.clone()),
            state: Arc::clone(&state),
        };
        let stop = stop.clone();
        let read_timeout = options.read_timeout;
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout)
                .keep_alive(true);
            // Upgrades: a page beside `/mcp` may serve a websocket.
            let connection = builder
                .serve_connection(TokioIo::new(io), service)
                .with_upgrades();
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                // Given way to a newcomer: closed at once.
                () = state.shed().cancelled() => {}
                // Its client has not read what it was sent for as long as
                // a request may take to arrive: closed.
                () = stalled(&state, read_timeout) => {}
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
        while connections.try_join_next().is_some() {}
    }
    while connections.join_next().await.is_some() {}
}

/// Resolves once a write on the connection of `state` has waited longer
/// than `patience` for its client to read (looked at every second).
async fn stalled(state: &ConnectionState, patience: Duration) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if state.stalled_for() > patience {
            return;
        }
    }
}

/// A connection's requests, tracking its state for [`Connections`]: busy
/// from a request's head to the end of its response, idle between;
/// upgraded (busy until it closes) once it switched protocols.
struct Tracked {
    routes: Arc<Routes>,
    /// The routes beside `/mcp`.
    others: TowerToHyperService<axum::Router>,
    state: Arc<ConnectionState>,
}

impl hyper::service::Service<http::Request<hyper::body::Incoming>> for Tracked {
    type Response = http::Response<axum::body::Body>;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn call(&self, mut request: http::Request<hyper::body::Incoming>) -> Self::Future {
        self.state.busy();
        let state = Arc::clone(&self.state);
        if Routes::is_mcp(request.uri().path()) {
            // Straight to the MCP route: no router, no layers.
            let routes = Arc::clone(&self.routes);
            return Box::pin(async move {
                let response = routes.mcp(request.map(Body::new), &state).await;
                Ok(idle_when_done(response, state))
            });
        }
        request
            .extensions_mut()
            .insert(OnConnection(Arc::clone(&self.state)));
        let answer = self.others.call(request);
        Box::pin(async move {
            let response = answer.await?;
            if response.status() == http::StatusCode::SWITCHING_PROTOCOLS {
                state.upgraded();
                return Ok(response);
            }
            Ok(idle_when_done(response, state))
        })
    }
}

/// `response`, marking the connection of `state` idle when its body ends.
fn idle_when_done(response: Response, state: Arc<ConnectionState>) -> Response {
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(Held::new(body, IdleWhenDone(state))))
}

/// The connection a request came on (a request extension).
#[derive(Clone)]
struct OnConnection(Arc<ConnectionState>);

/// Marks its connection idle when the response it is held by ends.
struct IdleWhenDone(Arc<ConnectionState>);

impl Drop for IdleWhenDone {
    fn drop(&mut self) {
        self.0.idle();
    }
}
