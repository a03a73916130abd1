//! From a surface change to the MCP client receiving
//! `notifications/tools/list_changed`, over an in-process duplex stream:
//! the application navigates (unmounting or mounting the devices page) and
//! the clock stops when the client's handler sees the notification — the
//! handshake-era push and the 2026-07-28 `subscriptions/listen` stream.
//! Also one `tools/call` while 1 or 1,000 other sessions sit idle: a call
//! costs the others nothing, so both take the same time.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_surface::mcp::McpServer;
use criterion::{Criterion, criterion_group, criterion_main};
use devices::components::Route;
use devices::{App, User};
use rmcp::model::{ProtocolVersion, SubscriptionFilter};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use tokio::sync::watch;

#[derive(Clone)]
struct Pushes(Arc<watch::Sender<u64>>);

impl ClientHandler for Pushes {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.send_modify(|n| *n += 1);
    }
}

fn list_changed(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("surface change to list_changed");
    // Each sample also waits (untimed) for stragglers: keep the run short.
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for modern in [false, true] {
        let (app, client, pushes) = runtime.block_on(async {
            let app = App::start(User::admin()).await.unwrap();
            let server = McpServer::builder(app.registry()).build();
            let (client_io, server_io) = tokio::io::duplex(256 * 1024);
            tokio::spawn(async move {
                if let Ok(running) = server.serve(server_io).await {
                    let _ = running.waiting().await;
                }
            });
            let pushes = Pushes(Arc::new(watch::channel(0).0));
            let lifecycle = if modern {
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                }
            } else {
                ClientLifecycleMode::Initialize
            };
            let client = pushes
                .clone()
                .serve_with_lifecycle(client_io, lifecycle)
                .await
                .unwrap();
            // One round trip: the server has processed the handshake.
            client.list_all_tools().await.unwrap();
            (app, client, pushes)
        });
        let subscription = runtime.block_on(async {
            if modern {
                Some(
                    client
                        .listen(SubscriptionFilter::builder().tools_list_changed().build())
                        .await
                        .unwrap(),
                )
            } else {
                None
            }
        });
        let subscription = Arc::new(tokio::sync::Mutex::new(subscription));
        let name = if modern {
            "2026-07-28 listen stream"
        } else {
            "2025-11-25 push"
        };
        // The app starts on /devices: the first change leaves it.
        let mut route = Route::Devices;
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_custom(|iters| {
                let app = app.clone();
                let pushes = pushes.clone();
                let subscription = Arc::clone(&subscription);
                let routes: Vec<Route> = (0..iters)
                    .map(|_| {
                        route = if route == Route::Settings {
                            Route::Devices
                        } else {
                            Route::Settings
                        };
                        route
                    })
                    .collect();
                async move {
                    let mut total = Duration::ZERO;
                    let mut seen = pushes.0.subscribe();
                    let mut subscription = subscription.lock().await;
                    for route in routes {
                        seen.mark_unchanged();
                        let started = Instant::now();
                        app.console().navigate(route);
                        match subscription.as_mut() {
                            Some(stream) => {
                                stream.next().await.unwrap();
                            }
                            None => {
                                seen.changed().await.unwrap();
                            }
                        }
                        total += started.elapsed();
                        // Untimed: let any further notification of this
                        // change arrive, so the next sample starts clean.
                        match subscription.as_mut() {
                            Some(stream) => {
                                while let Ok(Ok(Some(_))) =
                                    tokio::time::timeout(Duration::from_micros(500), stream.next())
                                        .await
                                {}
                            }
                            None => tokio::time::sleep(Duration::from_micros(500)).await,
                        }
                    }
                    total
                }
            });
        });
        drop(subscription);
        runtime.block_on(async {
            let _ = client.cancel().await;
            app.stop().await;
        });
    }
    group.finish();
}

/// A classic session over a duplex stream (its list_changed notifier runs).
async fn session(server: &McpServer) -> rmcp::service::RunningService<RoleClient, Pushes> {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    Pushes(Arc::new(watch::channel(0).0))
        .serve_with_lifecycle(client_io, ClientLifecycleMode::Initialize)
        .await
        .unwrap()
}

fn call_with_idle_sessions(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("tools/call with idle sessions");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for idle in [1usize, 1000] {
        let (app, idle_sessions, client) = runtime.block_on(async {
            let app = App::start(User::admin()).await.unwrap();
            let server = McpServer::builder(app.registry()).build();
            let mut idle_sessions = Vec::with_capacity(idle);
            for _ in 0..idle {
                let client = session(&server).await;
                // One round trip: the session's view and notifier exist.
                client.list_all_tools().await.unwrap();
                idle_sessions.push(client);
            }
            let client = session(&server).await;
            client.list_all_tools().await.unwrap();
            (app, idle_sessions, client)
        });
        let arguments = serde_json::json!({"status": "online"})
            .as_object()
            .cloned()
            .unwrap();
        group.bench_function(format!("{idle} idle"), |b| {
            b.to_async(&runtime).iter(|| {
                let request = rmcp::model::CallToolRequestParams::new("view_devices__filters__set")
                    .with_arguments(arguments.clone());
                let client = &client;
                async move { client.call_tool(request).await.unwrap() }
            });
        });
        runtime.block_on(async {
            let _ = client.cancel().await;
            for session in idle_sessions {
                let _ = session.cancel().await;
            }
            app.stop().await;
        });
    }
    group.finish();
}

criterion_group!(benches, list_changed, call_with_idle_sessions);
criterion_main!(benches);
