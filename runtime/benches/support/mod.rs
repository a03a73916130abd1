//! What the MCP benchmarks share: the no-op tool written both ways (an
//! agent-surface component and a bare rmcp `#[tool]` server), the servers
//! on an in-process duplex stream and on streamable HTTP over loopback, and
//! sorted-latency percentiles.

#![allow(dead_code)] // each bench uses a part

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_surface::mcp::{HttpServer, McpServer};
use agent_surface::prelude::*;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolRequestParams, ServerCapabilities, ServerConfig};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{
    ClientHandler, Peer, RoleClient, RoleServer, ServerHandler, ServiceExt, tool, tool_handler,
    tool_router,
};
use tokio_util::sync::CancellationToken;

/// A component with one no-op action.
pub struct Noop;

/// A no-op component.
#[agent_component(type = "bench.noop")]
impl Noop {
    /// Does nothing.
    #[action(effect = "local-state", idempotent)]
    fn noop(&self) {}
}

/// The same tool on a bare rmcp server.
#[derive(Clone)]
pub struct Bare {
    tool_router: ToolRouter<Self>,
    /// When set, every session sends `notifications/tools/list_changed`
    /// each time this moves (the least an rmcp server does to announce a
    /// change to every session).
    announce: Option<tokio::sync::watch::Receiver<u64>>,
}

#[tool_router]
impl Bare {
    /// Does nothing.
    #[tool(description = "Does nothing.")]
    fn noop(&self) -> String {
        String::new()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools();
        ServerConfig::new(match self.announce {
            Some(_) => capabilities.enable_tool_list_changed().build(),
            None => capabilities.build(),
        })
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Some(mut announce) = self.announce.clone() else {
            return;
        };
        announce.mark_unchanged();
        tokio::spawn(async move {
            while announce.changed().await.is_ok() {
                if context.peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        });
    }
}

impl Bare {
    pub fn new() -> Bare {
        Bare {
            tool_router: Self::tool_router(),
            announce: None,
        }
    }

    /// A server whose sessions announce a change whenever `announce` moves.
    pub fn announcing(announce: tokio::sync::watch::Receiver<u64>) -> Bare {
        Bare {
            announce: Some(announce),
            ..Bare::new()
        }
    }
}

/// A client handler counting the `tools/list_changed` notifications it gets.
#[derive(Clone, Default)]
pub struct Counting(pub Arc<AtomicUsize>);

impl ClientHandler for Counting {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A connected client and the name of its no-op tool.
pub struct Client {
    pub client: Peer<RoleClient>,
    pub tool: String,
    /// `tools/list_changed` notifications received.
    pub list_changed: Arc<AtomicUsize>,
    _running: Option<RunningService<RoleClient, Counting>>,
}

impl Client {
    async fn connect(running: RunningService<RoleClient, Counting>) -> Client {
        let mut client = Client::of(running.peer().clone()).await;
        client.list_changed = Arc::clone(&running.service().0);
        client._running = Some(running);
        client
    }

    /// A client of a session some other handler runs.
    pub async fn of(peer: Peer<RoleClient>) -> Client {
        let tools = peer.list_all_tools().await.unwrap();
        let tool = tools
            .iter()
            .map(|tool| tool.name.to_string())
            .find(|name| name.ends_with("noop"))
            .unwrap();
        Client {
            client: peer,
            tool,
            list_changed: Arc::default(),
            _running: None,
        }
    }

    /// One `tools/call` of the no-op tool with `{}` as arguments.
    pub async fn call(&self) {
        let result = self
            .client
            .call_tool(
                CallToolRequestParams::new(self.tool.clone()).with_arguments(Default::default()),
            )
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true));
    }
}

/// A registry with [`Noop`] mounted (keep the handle alive).
pub fn noop_registry() -> (Registry, Mounted) {
    let registry = Registry::builder().build();
    let mounted = registry.mount(Arc::new(Noop)).unwrap();
    (registry, mounted)
}

/// A client of `server` over an in-process duplex stream.
pub async fn duplex_agent_surface(server: &McpServer) -> Client {
    let (client_io, server_io) = tokio::io::duplex(256 * 1024);
    let server = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    Client::connect(Counting::default().serve(client_io).await.unwrap()).await
}

/// A client of a bare rmcp server over an in-process duplex stream.
pub async fn duplex_rmcp() -> Client {
    let (client_io, server_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = Bare::new().serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    Client::connect(Counting::default().serve(client_io).await.unwrap()).await
}

/// agent-surface's streamable HTTP endpoint on a loopback port.
pub async fn http_agent_surface(server: &McpServer) -> HttpServer {
    server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

/// agent-surface's endpoint router (`McpServer::http_service`) served by
/// `axum::serve` as the bare rmcp side is: isolates the accept loop.
pub async fn http_agent_surface_on_axum(server: &McpServer, stop: CancellationToken) -> String {
    let router = axum::Router::new().nest_service("/mcp", server.http_service(stop.child_token()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled_owned().await })
            .await;
    });
    format!("http://{address}/mcp")
}

/// A bare rmcp streamable HTTP endpoint on a loopback port (rmcp's own
/// defaults, served by axum); returns its URL.
pub async fn http_rmcp(stop: CancellationToken) -> String {
    http_rmcp_with(stop, Bare::new).await
}

/// [`http_rmcp`] with each session's handler made by `handler`.
pub async fn http_rmcp_with(
    stop: CancellationToken,
    handler: impl Fn() -> Bare + Send + Sync + 'static,
) -> String {
    let service: StreamableHttpService<Bare, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(handler()),
        Arc::default(),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled_owned().await })
            .await;
    });
    format!("http://{address}/mcp")
}

/// A streamable HTTP client session at `url`.
pub async fn http_client(url: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    Client::connect(Counting::default().serve(transport).await.unwrap()).await
}

/// Sorted latencies.
pub struct Latencies(Vec<Duration>);

impl Latencies {
    pub fn new(mut samples: Vec<Duration>) -> Latencies {
        samples.sort_unstable();
        Latencies(samples)
    }

    /// The `q` quantile (0.5 for the median), nearest rank.
    pub fn quantile(&self, q: f64) -> Duration {
        let rank = ((self.0.len() as f64) * q).ceil() as usize;
        self.0
            .get(rank.saturating_sub(1).min(self.0.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// Times `count` sequential calls.
pub async fn time_calls(client: &Client, count: usize, into: &mut Vec<Duration>) {
    for _ in 0..count {
        let started = Instant::now();
        client.call().await;
        into.push(started.elapsed());
    }
}

/// The CPU time process `pid` (`"self"` for this one) has run on its live
/// threads, in ns: the sum of `/proc/PID/task/*/schedstat` (`stat` counts
/// 10 ms ticks, too coarse for a block of calls or one change).
pub fn cpu_ns(pid: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// This process's CPU time so far (see [`cpu_ns`]).
pub fn cpu_time() -> Duration {
    Duration::from_nanos(cpu_ns("self"))
}

/// Microseconds with one decimal.
pub fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// Whether the binary runs as `cargo bench` (not `cargo test --benches`,
/// nor criterion's `--profile-time`).
pub fn benching() -> bool {
    std::env::args().any(|arg| arg == "--bench")
        && !std::env::args().any(|arg| arg == "--profile-time")
}
