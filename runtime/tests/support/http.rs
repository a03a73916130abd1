//! The devices example's app served over HTTP for the raw MCP client
//! ([`RawMcp`](super::raw_mcp::RawMcp)): `/mcp` alone, or beside a web
//! console's pages.

use agent_surface::mcp::{HttpServer, McpServer, McpServerBuilder};
use axum::http::StatusCode as PageStatus;

use devices::{App, User};

use super::raw_mcp::RawMcp;

/// The devices app served over HTTP on a loopback port: `/mcp` alone
/// (`serve`), or beside a web console's pages (`serve_beside_pages`).
pub struct Served {
    pub app: App,
    pub server: McpServer,
    pub http: HttpServer,
    pub raw: RawMcp,
}

impl std::ops::Deref for Served {
    type Target = RawMcp;

    fn deref(&self) -> &RawMcp {
        &self.raw
    }
}

impl Served {
    /// Where it listens.
    pub fn address(&self) -> std::net::SocketAddr {
        self.http.local_addr()
    }
}

/// The pages of a web console beside `/mcp`: `/devices` and its websocket
/// `/ws`, both refusing a browser that has not signed in.
fn pages() -> axum::Router {
    let refused = || async { (PageStatus::UNAUTHORIZED, "sign in first") };
    axum::Router::new()
        .route("/devices", axum::routing::get(refused))
        .route("/ws", axum::routing::get(refused))
}

/// A fresh app for the admin served with `/mcp` beside the console's
/// pages (one listener, one gate), the builder adjusted by `tune`.
pub async fn serve_beside_pages(tune: impl FnOnce(McpServerBuilder) -> McpServerBuilder) -> Served {
    let app = App::start(User::admin())
        .await
        .expect("the devices app starts");
    let server = tune(McpServer::builder(app.registry()).name("devices")).build();
    let http = server
        .serve_with("127.0.0.1:0".parse().unwrap(), pages())
        .await
        .unwrap();
    let url = http.url();
    Served {
        app,
        server,
        http,
        raw: RawMcp::new(url),
    }
}

/// Serves a fresh app for `user` at `/mcp`, the builder adjusted by `tune`.
pub async fn serve_as(
    user: User,
    tune: impl FnOnce(McpServerBuilder) -> McpServerBuilder,
) -> Served {
    let app = App::start(user).await.expect("the devices app starts");
    let server = tune(McpServer::builder(app.registry()).name("devices")).build();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = http.url();
    Served {
        app,
        server,
        http,
        raw: RawMcp::new(url),
    }
}

/// [`serve_as`] the admin.
pub async fn serve(tune: impl FnOnce(McpServerBuilder) -> McpServerBuilder) -> Served {
    serve_as(User::admin(), tune).await
}

/// A fresh app for the admin whose `/mcp` is [`McpServer::http_service`]
/// nested in a host's own router on `axum::serve`: nothing in front of the
/// route checks `Origin` or `Host`. Stopped when dropped.
pub struct Mounted {
    pub app: App,
    pub raw: RawMcp,
    pub address: std::net::SocketAddr,
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.stop.cancel();
        self.task.abort();
    }
}

/// Serves a fresh app's `http_service` in a host router, the builder
/// adjusted by `tune`.
pub async fn mount_in_host_router(
    tune: impl FnOnce(McpServerBuilder) -> McpServerBuilder,
) -> Mounted {
    let app = App::start(User::admin())
        .await
        .expect("the devices app starts");
    let server = tune(McpServer::builder(app.registry()).name("devices")).build();
    let stop = tokio_util::sync::CancellationToken::new();
    let router = pages()
        .nest_service("/mcp", server.http_service(stop.clone()))
        .merge(server.metadata_routes());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Mounted {
        app,
        raw: RawMcp::new(format!("http://{address}/mcp")),
        address,
        stop,
        task,
    }
}
