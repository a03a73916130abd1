//! `tools/list_changed` delivery under pressure, with rmcp's own client
//! over in-process duplex streams: a change made right after the server
//! acknowledged `subscriptions/listen` (2026-07-28), or right after
//! `initialized` (handshake era), is always notified; and a call costs
//! nothing for the other, idle sessions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)] // test code

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_surface::mcp::McpServer;
use agent_surface::prelude::*;
use devices::components::Route;
use rmcp::model::{CallToolRequestParams, ProtocolVersion, SubscriptionFilter};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::json;
use support::{App, User};
use tokio::sync::watch;

/// Generous: a notification that takes this long is lost, not late.
const PATIENCE: Duration = Duration::from_secs(5);

/// Counts pushed `tools/list_changed` notifications.
#[derive(Clone)]
struct Pushes(Arc<watch::Sender<u64>>);

impl Pushes {
    fn new() -> Pushes {
        Pushes(Arc::new(watch::channel(0).0))
    }
}

impl ClientHandler for Pushes {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.send_modify(|n| *n += 1);
    }
}

/// Serves `server` on one end of an in-process stream; the other end.
fn serve_on_duplex(server: &McpServer) -> tokio::io::DuplexStream {
    let (client_io, server_io) = tokio::io::duplex(256 * 1024);
    let server = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    client_io
}

async fn connect(server: &McpServer, modern: bool) -> (RunningService<RoleClient, Pushes>, Pushes) {
    let client_io = serve_on_duplex(server);
    let pushes = Pushes::new();
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
        .expect("the MCP handshake");
    (client, pushes)
}

async fn call(
    client: &RunningService<RoleClient, Pushes>,
    name: &str,
    arguments: serde_json::Value,
) {
    let result = client
        .call_tool(
            CallToolRequestParams::new(name.to_owned())
                .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
        )
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
}

/// The `i`-th change of a cycle of four, each one changing the tools: the
/// drawer opens (its `close` becomes available: live state, no version
/// bump) and closes, the agent navigates away, the application navigates
/// back (a mutation made by the application, not by a call).
async fn change(i: usize, app: &App, client: &RunningService<RoleClient, Pushes>) {
    match i % 4 {
        0 => {
            call(
                client,
                "view_devices__drawer__open",
                json!({"deviceId": "d1"}),
            )
            .await
        }
        1 => call(client, "view_devices__drawer__close", json!({})).await,
        2 => {
            call(
                client,
                "view_app__navigation__goTo",
                json!({"route": "/settings"}),
            )
            .await
        }
        _ => app.console().navigate(Route::Devices),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_adapter_003_a_change_right_after_the_listen_acknowledgment_is_always_notified() {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let (client, _) = connect(&server, true).await;
    for i in 0..60 {
        // `listen` returns once the server acknowledged the subscription.
        let mut subscription = client
            .listen(SubscriptionFilter::builder().tools_list_changed().build())
            .await
            .unwrap();
        change(i, &app, &client).await;
        let event = tokio::time::timeout(PATIENCE, subscription.next())
            .await
            .unwrap_or_else(|_| panic!("iteration {i}: no tools/list_changed after the change"))
            .unwrap();
        assert!(event.is_some(), "iteration {i}: the stream ended");
        subscription.cancel().await.unwrap();
    }
    app.stop().await;
}

/// Stateless (2026-07-28 over HTTP): every call is an anonymous caller of
/// its own and the listen stream another; a call that changes live state
/// (the drawer: no version bump) reaches the stream through the one signal
/// all anonymous listeners follow, also when changes come in quick
/// succession (gathered, then re-checked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_adapter_003_a_stateless_call_reaches_an_anonymous_listen_stream() {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(http.url());
    let client = Pushes::new()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("the MCP handshake");
    for i in 0..12 {
        let mut subscription = client
            .listen(SubscriptionFilter::builder().tools_list_changed().build())
            .await
            .unwrap();
        change(i, &app, &client).await;
        let event = tokio::time::timeout(PATIENCE, subscription.next())
            .await
            .unwrap_or_else(|_| panic!("change {i}: no tools/list_changed on the listen stream"))
            .unwrap();
        assert!(event.is_some(), "change {i}: the stream ended");
        subscription.cancel().await.unwrap();
    }
    http.shutdown().await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_adapter_003_a_change_right_after_initialized_is_always_notified() {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    for i in 0..60 {
        // The handshake ends when the client sent `initialized`.
        let (client, pushes) = connect(&server, false).await;
        let mut pushed = pushes.0.subscribe();
        change(i, &app, &client).await;
        tokio::time::timeout(PATIENCE, pushed.wait_for(|n| *n > 0))
            .await
            .unwrap_or_else(|_| panic!("iteration {i}: no tools/list_changed after the change"))
            .unwrap();
        client.cancel().await.unwrap();
    }
    app.stop().await;
}

/// Counts how often its availability is evaluated: once per tool build
/// that includes it, plus once per call of it.
struct Gauge {
    evaluations: AtomicUsize,
}

/// A tool whose availability is counted.
#[agent_component(type = "test.gauge")]
impl Gauge {
    /// Does nothing.
    #[action(effect = "local-state", idempotent, when = counted, unavailable_reason = "never")]
    fn tick(&self) {}

    fn counted(&self) -> bool {
        self.evaluations.fetch_add(1, Ordering::SeqCst);
        true
    }
}

/// Availability evaluations over `calls` calls by one session while
/// `idle` other sessions (each with its own list_changed notifier) wait.
async fn evaluations_per_call(idle: usize, calls: usize) -> usize {
    let app = App::start(User::admin()).await.unwrap();
    let gauge = Arc::new(Gauge {
        evaluations: AtomicUsize::new(0),
    });
    let _mounted = app.registry().mount(Arc::clone(&gauge)).unwrap();
    let server = McpServer::builder(app.registry()).build();
    let mut sessions = Vec::new();
    for _ in 0..idle {
        let (client, _) = connect(&server, false).await;
        client.list_all_tools().await.unwrap();
        sessions.push(client);
    }
    let (active, _) = connect(&server, false).await;
    active.list_all_tools().await.unwrap();
    settle().await;
    gauge.evaluations.store(0, Ordering::SeqCst);
    for _ in 0..calls {
        call(&active, "view_test__gauge__tick", json!({})).await;
    }
    // Whatever the calls set off in other tasks runs now (one thread).
    settle().await;
    let evaluations = gauge.evaluations.load(Ordering::SeqCst);
    for client in sessions {
        let _ = client.cancel().await;
    }
    app.stop().await;
    evaluations
}

/// Lets every task woken so far run (single-threaded runtime).
async fn settle() {
    for _ in 0..256 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_call_does_no_work_for_idle_sessions() {
    let calls = 5;
    let alone = evaluations_per_call(0, calls).await;
    let crowded = evaluations_per_call(40, calls).await;
    // The call's own availability check, and the caller's watcher
    // rebuilding its own tools: a small constant per call.
    assert!(alone <= 3 * calls, "alone: {alone}");
    assert_eq!(
        crowded, alone,
        "40 idle sessions must not re-evaluate anything on another session's call"
    );
}

/// A component that comes and goes (a surface change).
struct Extra;

/// Comes and goes.
#[agent_component(type = "test.extra")]
impl Extra {
    /// Its state.
    #[observation]
    fn read(&self) -> u32 {
        1
    }
}

/// Hides what it guards from consumers whose label names a restricted
/// client (discovery reads the consumer: what it sees is its own).
struct HideFromRestricted;

impl agent_surface::policy::Policy for HideFromRestricted {
    fn name(&self) -> &str {
        "hide-from-restricted"
    }
    fn on_discovery(
        &self,
        ctx: &agent_surface::policy::PolicyContext<'_>,
    ) -> agent_surface::policy::Decision {
        if ctx
            .consumer()
            .label()
            .is_some_and(|label| label.contains("restricted"))
        {
            agent_surface::policy::Decision::Hide
        } else {
            agent_surface::policy::Decision::Expose
        }
    }
}

/// A component restricted clients do not see.
struct Guarded;

/// Guarded.
#[agent_component(type = "test.guarded", policies = [HideFromRestricted])]
impl Guarded {
    /// Does nothing.
    #[action(effect = "local-state", idempotent)]
    fn poke(&self) {}
}

/// A client that names itself, and counts its pushed notifications.
#[derive(Clone)]
struct Named(&'static str, Pushes);

impl ClientHandler for Named {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.1.on_tool_list_changed(context).await;
    }
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::default(),
            rmcp::model::Implementation::new(self.0, "1.0"),
        )
    }
}

async fn connect_named(
    server: &McpServer,
    name: &'static str,
) -> (RunningService<RoleClient, Named>, Pushes) {
    let client_io = serve_on_duplex(server);
    let pushes = Pushes::new();
    let client = Named(name, pushes.clone())
        .serve_with_lifecycle(client_io, ClientLifecycleMode::Initialize)
        .await
        .expect("the MCP handshake");
    (client, pushes)
}

async fn tool_names<H: ClientHandler>(client: &RunningService<RoleClient, H>) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn sessions_that_see_the_same_tools_share_one_build_per_change() {
    let registry = Registry::default();
    let gauge = Arc::new(Gauge {
        evaluations: AtomicUsize::new(0),
    });
    let _gauge = registry.mount(Arc::clone(&gauge)).unwrap();
    let server = McpServer::builder(&registry).build();
    let mut sessions = Vec::new();
    for _ in 0..8 {
        let (client, pushes) = connect(&server, false).await;
        client.list_all_tools().await.unwrap();
        sessions.push((client, pushes));
    }
    settle().await;
    for change in 1..=3u64 {
        gauge.evaluations.store(0, Ordering::SeqCst);
        // A surface change: a mount, then an unmount.
        let extra = registry.mount(Arc::new(Extra)).unwrap();
        for (i, (_, pushes)) in sessions.iter().enumerate() {
            let mut pushed = pushes.0.subscribe();
            tokio::time::timeout(PATIENCE, pushed.wait_for(|n| *n >= 2 * change - 1))
                .await
                .unwrap_or_else(|_| panic!("change {change}: session {i} was not notified"))
                .unwrap();
        }
        settle().await;
        assert_eq!(
            gauge.evaluations.load(Ordering::SeqCst),
            1,
            "change {change}: eight sessions seeing the same tools build them once"
        );
        gauge.evaluations.store(0, Ordering::SeqCst);
        extra.unmount();
        for (i, (_, pushes)) in sessions.iter().enumerate() {
            let mut pushed = pushes.0.subscribe();
            tokio::time::timeout(PATIENCE, pushed.wait_for(|n| *n >= 2 * change))
                .await
                .unwrap_or_else(|_| panic!("change {change}: session {i} missed the unmount"))
                .unwrap();
        }
        settle().await;
        assert_eq!(gauge.evaluations.load(Ordering::SeqCst), 1);
    }
    // Each lists what it was told about.
    for (client, _) in &sessions {
        assert_eq!(
            tool_names(client).await,
            ["view_test__gauge__tick"].map(str::to_owned)
        );
    }
    for (client, _) in sessions {
        let _ = client.cancel().await;
    }
}

#[tokio::test]
async fn sessions_that_see_different_tools_keep_their_own_lists() {
    let registry = Registry::default();
    let gauge = Arc::new(Gauge {
        evaluations: AtomicUsize::new(0),
    });
    let _gauge = registry.mount(Arc::clone(&gauge)).unwrap();
    let server = McpServer::builder(&registry).build();
    let (full, full_pushes) = connect_named(&server, "full-agent").await;
    let (restricted, restricted_pushes) = connect_named(&server, "restricted-agent").await;
    let (other, other_pushes) = connect(&server, false).await;
    for names in [
        tool_names(&full).await,
        tool_names(&restricted).await,
        tool_names(&other).await,
    ] {
        assert_eq!(names, ["view_test__gauge__tick"].map(str::to_owned));
    }
    settle().await;
    // Only the consumers the policy shows see the new tool, and only they
    // are told their tools changed.
    let guarded = registry.mount(Arc::new(Guarded)).unwrap();
    for pushes in [&full_pushes, &other_pushes] {
        tokio::time::timeout(PATIENCE, pushes.0.subscribe().wait_for(|n| *n >= 1))
            .await
            .expect("a session that sees the new tool is notified")
            .unwrap();
    }
    settle().await;
    assert_eq!(*restricted_pushes.0.borrow(), 0, "nothing changed for it");
    let both = ["view_test__gauge__tick", "view_test__guarded__poke"].map(str::to_owned);
    assert_eq!(tool_names(&full).await, both);
    assert_eq!(tool_names(&other).await, both);
    assert_eq!(
        tool_names(&restricted).await,
        ["view_test__gauge__tick"].map(str::to_owned)
    );
    // Its calls resolve against its own tools too.
    let refused = restricted
        .call_tool(CallToolRequestParams::new("view_test__guarded__poke"))
        .await;
    assert!(
        refused.is_err() || refused.as_ref().is_ok_and(|r| r.is_error == Some(true)),
        "{refused:?}"
    );
    let ok = full
        .call_tool(CallToolRequestParams::new("view_test__guarded__poke"))
        .await
        .unwrap();
    assert_ne!(ok.is_error, Some(true), "{ok:?}");
    // Once the guarded component goes, the surface is the same for all
    // again: the unrestricted sessions are told.
    guarded.unmount();
    for pushes in [&full_pushes, &other_pushes] {
        tokio::time::timeout(PATIENCE, pushes.0.subscribe().wait_for(|n| *n >= 2))
            .await
            .expect("notified of the unmount")
            .unwrap();
    }
    settle().await;
    assert_eq!(*restricted_pushes.0.borrow(), 0);
    let gauge_only = ["view_test__gauge__tick"].map(str::to_owned);
    assert_eq!(tool_names(&full).await, gauge_only);
    assert_eq!(tool_names(&other).await, gauge_only);
    for client in [full, restricted] {
        let _ = client.cancel().await;
    }
    let _ = other.cancel().await;
}

/// A tool without `when` or notes: nothing of it changes without a
/// surface version bump.
struct Still;

/// A component that never changes.
#[agent_component(type = "test.still")]
impl Still {
    /// Does nothing.
    #[action(effect = "local-state", idempotent)]
    fn nothing(&self) {}
}

/// What lets a settled call skip its session's re-check: a snapshot is
/// live exactly when something it considers reads state, shown or not.
#[tokio::test]
async fn a_snapshot_is_live_when_a_registration_it_considers_has_a_when() {
    let registry = Registry::default();
    let options = agent_surface::snapshot::SnapshotOptions::default();
    assert!(!registry.snapshot(&options).is_live());
    let _still = registry.mount(Arc::new(Still)).unwrap();
    let snapshot = registry.snapshot(&options);
    assert!(!snapshot.is_live() && !snapshot.depends_on_consumer());
    let gauge = registry
        .mount(Arc::new(Gauge {
            evaluations: AtomicUsize::new(0),
        }))
        .unwrap();
    assert!(registry.snapshot(&options).is_live());
    // Out of scope: not considered.
    let mut scoped = options.clone();
    scoped.scope = vec!["test.still".to_owned()];
    assert!(!registry.snapshot(&scoped).is_live());
    drop(gauge);
    assert!(!registry.snapshot(&options).is_live());
}
