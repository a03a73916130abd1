//! The web console: the devices console as a live web application. Dioxus
//! LiveView on axum renders it from this process (component logic native,
//! no wasm; the page is a thin client over a websocket), and the same
//! process serves the agent surface over MCP streamable HTTP at `/mcp`.
//!
//! **One surface per application.** The console's state, its registry and
//! its MCP endpoint belong to the running application: every tab shows the
//! same console, and the agent connected at `/mcp` sees what the person
//! does in the page. The components that mount the capabilities are those
//! of the tab in front: a newly opened tab takes the console over (its
//! mounts replace the older tab's, the registry being built with
//! [`DuplicatePolicy::Replace`]) and the older tab says so and offers to
//! take it back.

mod agent_panel;
mod dialog;
mod views;
mod watch;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_surface::mcp::McpServer;
use agent_surface::registry::{DuplicatePolicy, Registry};
use axum::Router;
use axum::extract::{Query, WebSocketUpgrade};
use axum::response::{Html, Redirect};
use axum::routing::get;
use dioxus::dioxus_core::VirtualDom;
use dioxus_liveview::{LiveViewPool, axum_socket, interpreter_glue};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::app::{App, host_for, registry_builder};
use crate::components::Route;
use crate::server::User;

/// The registry of a web console for `user`: the console's configuration
/// with the newest tab's mounts replacing an older tab's.
pub fn registry(user: &User) -> Registry {
    let host = host_for(user);
    registry_builder()
        .host_context(move || host.clone())
        .duplicate_instances(DuplicatePolicy::Replace)
        .build()
}

/// Which tab drives the console.
#[derive(Debug)]
pub(crate) struct Tabs {
    next: AtomicU64,
    active: tokio::sync::watch::Sender<u64>,
}

impl Tabs {
    fn open(&self) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.active.send_replace(id);
        id
    }

    /// Makes tab `id` the one in front.
    pub(crate) fn take_over(&self, id: u64) {
        self.active.send_replace(id);
    }
}

/// What every tab's `VirtualDom` receives as root context.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) app: App,
    pub(crate) tabs: Arc<Tabs>,
    pub(crate) mcp_url: String,
}

/// This tab's number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TabId(pub(crate) u64);

/// The route a tab opens on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenedOn(pub(crate) Option<Route>);

/// A running web console.
#[derive(Debug)]
pub struct WebConsole {
    address: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl WebConsole {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The page's URL (`http://127.0.0.1:PORT/devices`).
    pub fn url(&self) -> String {
        format!("http://{}/devices", self.address)
    }

    /// The MCP endpoint's URL (`http://127.0.0.1:PORT/mcp`).
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Stops serving and waits for the server task.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

#[derive(Deserialize)]
struct Opened {
    route: Option<String>,
}

fn page(path: &str) -> Html<String> {
    let glue = interpreter_glue(&format!("/ws?route={path}"));
    Html(format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Devices console</title>
<style>{style}</style>
</head>
<body><div id="main"></div>{glue}</body>
</html>"#,
        style = include_str!("style.css"),
    ))
}

/// Serves the console for `app` at `address` (use a loopback address: the
/// page and `/mcp` have no authentication of their own): the page at
/// `/devices` and `/settings`, its websocket at `/ws`, and `mcp`'s
/// streamable HTTP at `/mcp`.
pub async fn serve(
    app: App,
    mcp: &McpServer,
    address: SocketAddr,
) -> Result<WebConsole, std::io::Error> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let address = listener.local_addr()?;
    let stop = CancellationToken::new();
    let shared = Shared {
        app,
        tabs: Arc::new(Tabs {
            next: AtomicU64::new(0),
            active: tokio::sync::watch::channel(0).0,
        }),
        mcp_url: format!("http://{address}/mcp"),
    };
    let pool = LiveViewPool::new();
    let router = Router::new()
        .route("/", get(|| async { Redirect::to("/devices") }))
        .route("/devices", get(|| async { page("/devices") }))
        .route("/settings", get(|| async { page("/settings") }))
        .route(
            "/ws",
            get(
                move |ws: WebSocketUpgrade, Query(opened): Query<Opened>| async move {
                    let route = match opened.route.as_deref() {
                        Some("/settings") => Some(Route::Settings),
                        Some("/devices") => Some(Route::Devices),
                        _ => None,
                    };
                    ws.on_upgrade(move |socket| async move {
                        let _ = pool
                            .launch_virtualdom(axum_socket(socket), move || {
                                let tab = TabId(shared.tabs.open());
                                VirtualDom::new(views::root)
                                    .with_root_context(shared.app.registry().clone())
                                    .with_root_context(shared)
                                    .with_root_context(tab)
                                    .with_root_context(OpenedOn(route))
                            })
                            .await;
                    })
                },
            ),
        )
        .nest_service("/mcp", mcp.http_service(stop.child_token()));
    let shutdown = stop.clone();
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
            .await;
        if let Err(err) = served {
            tracing::error!(%err, "the web console stopped");
        }
    });
    Ok(WebConsole {
        address,
        stop,
        task,
    })
}
