//! Sessions at scale: 1, 100 and 1,000 concurrent streamable-HTTP sessions
//! on loopback. For each count: the server's resident memory per idle
//! session, `tools/call` p50/p99 on one session while the others sit idle,
//! and the time from a surface change (a mount or unmount) to the last
//! session's `notifications/tools/list_changed`.
//!
//! The clients run in a child process (this binary again, with
//! `--sessions-client`), so the server's RSS (`/proc/self/statm`) holds only
//! the server. The child times the fan-out itself: it starts the clock,
//! asks the server over a pipe to change the surface, and stops it when
//! every session has seen a `list_changed`. The load is bounded (a fixed
//! number of calls and changes) and ends with the child.
//!
//! A third row per count has the idle clients speak 2026-07-28: stateless
//! requests, each idle client holding a `subscriptions/listen` stream (an
//! anonymous listener every anonymous call must reach), the active client
//! calling statelessly.
//!
//! `cargo bench -p agent-surface --features mcp --bench mcp_sessions [-- --sizes 1,100,1000]`

#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_surface::mcp::McpServer;
use agent_surface::prelude::*;
use rmcp::model::{ProtocolVersion, SubscriptionFilter};
use rmcp::service::NotificationContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use tokio::sync::Notify;

use support::{Client, Latencies, benching, micros, noop_registry, time_calls};

/// Calls timed on the active session (after as many warm-up calls / 4).
const CALLS: usize = 2_000;
/// Surface changes timed per session count.
const CHANGES: usize = 10;

/// A component mounted and unmounted to change the surface.
pub struct Extra;

/// A component that comes and goes.
#[agent_component(type = "bench.extra")]
impl Extra {
    /// Its state.
    #[observation]
    fn read(&self) -> u32 {
        1
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--sessions-client") {
        client_main(
            &args[at + 1],
            args[at + 2].parse().unwrap(),
            args[at + 3].parse().unwrap(),
            args.get(at + 4).is_some_and(|a| a == "modern"),
        );
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--sessions-server") {
        server_main(args[at + 1].parse().unwrap(), &args[at + 2]);
        return;
    }
    if !benching() {
        return; // `cargo test --benches`: nothing to check quickly
    }
    let sizes: Vec<usize> = args.iter().position(|a| a == "--sizes").map_or_else(
        || vec![1, 100, 1000],
        |at| {
            args[at + 1]
                .split(',')
                .map(|n| n.parse().unwrap())
                .collect()
        },
    );
    println!(
        "\n| server | sessions | server RSS per idle session | tools/call p50 | tools/call p99 | change → last list_changed (median / max of {CHANGES}) |"
    );
    println!("|---|---|---|---|---|---|");
    // Each count in a fresh server process: no memory freed by a previous
    // count is reused by the next.
    for sessions in sizes {
        for side in ["agent-surface", "bare", "modern"] {
            let status = Command::new(std::env::current_exe().unwrap())
                .args(["--sessions-server", &sessions.to_string(), side])
                .status()
                .unwrap();
            assert!(
                status.success(),
                "the server for {sessions} sessions failed"
            );
        }
    }
}

/// The CPU time (user and system, in clock ticks of 10 ms) `pid` has used.
fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name (which may hold spaces): fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |at: usize| {
        fields
            .get(at)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(11) + field(12)
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// One server (agent-surface's, or a bare rmcp one for comparison, which
/// has no surface to change) under `sessions` sessions.
fn server_main(sessions: usize, side: &str) {
    let bare = side == "bare";
    let modern = side == "modern";
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (registry, _noop) = noop_registry();
    // The defaults (64 sessions, 256 connections) are below the load:
    // every session holds its notification stream open on a connection.
    let server = McpServer::builder(&registry)
        .max_sessions(sessions + 8)
        .max_connections(2 * sessions + 64)
        .build();
    let stop = tokio_util::sync::CancellationToken::new();
    let (url, http) = if bare {
        (rt.block_on(support::http_rmcp(stop.clone())), None)
    } else {
        let http = rt.block_on(support::http_agent_surface(&server));
        (http.url(), Some(http))
    };
    // Listen streams report changes on their own streams, not to the
    // client handler: the fan-out is timed on sessions only.
    let changes = if bare || modern { 0 } else { CHANGES };
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--sessions-client",
            &url,
            &sessions.to_string(),
            &changes.to_string(),
            if modern { "modern" } else { "legacy" },
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_child = child.stdin.take().unwrap();
    let mut from_child = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut line = || from_child.next().unwrap().unwrap();
    // The first session pays for what any first use allocates (buffers,
    // thread caches): the others are measured against it.
    assert_eq!(line(), "warm");
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_bytes();
    writeln!(to_child, "more").unwrap();
    assert_eq!(line(), "connected");
    // Idle sessions: let background work settle before reading the RSS.
    std::thread::sleep(Duration::from_millis(500));
    let per_session = match sessions {
        1 => "—".to_owned(),
        _ => format!(
            "{:.1} kB",
            rss_bytes().saturating_sub(before) as f64 / (sessions - 1) as f64 / 1024.0
        ),
    };
    writeln!(to_child, "go").unwrap();
    let mut extra = None;
    // CPU used by each process while the changes fan out (the first
    // change's request to the report): who pays for the delivery.
    let child_pid = child.id().to_string();
    let mut cpu_from = None;
    loop {
        let request = line();
        match request.as_str() {
            "change" => {
                cpu_from.get_or_insert_with(|| (cpu_ticks("self"), cpu_ticks(&child_pid)));
                extra = match extra.take() {
                    None => Some(registry.mount(Arc::new(Extra)).unwrap()),
                    Some(mounted) => {
                        drop(mounted);
                        None
                    }
                };
                writeln!(to_child, "changed").unwrap();
            }
            report => {
                let name = match side {
                    "bare" => "bare rmcp",
                    "modern" => "agent-surface, 2026-07-28 listeners",
                    _ => "agent-surface",
                };
                println!("| {name} | {sessions} | {per_session} | {report}");
                if let Some((server, client)) = cpu_from {
                    let server = cpu_ticks("self").saturating_sub(server) * 10;
                    let client = cpu_ticks(&child_pid).saturating_sub(client) * 10;
                    eprintln!(
                        "{name}, {sessions} sessions: CPU during the {CHANGES} changes: server {server} ms, client {client} ms"
                    );
                }
                break;
            }
        }
    }
    drop(to_child);
    child.wait().unwrap();
    stop.cancel();
    if let Some(http) = http {
        rt.block_on(http.shutdown());
    }
}

/// Counts, per change, the sessions that saw a `list_changed`.
struct Fanout {
    change: AtomicU64,
    reached: AtomicUsize,
    sessions: usize,
    all: Notify,
}

#[derive(Clone)]
struct Session {
    fanout: Arc<Fanout>,
    last: Arc<AtomicU64>,
}

impl ClientHandler for Session {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let change = self.fanout.change.load(Ordering::SeqCst);
        if self.last.swap(change, Ordering::SeqCst) != change
            && self.fanout.reached.fetch_add(1, Ordering::SeqCst) + 1 == self.fanout.sessions
        {
            self.fanout.all.notify_one();
        }
    }
}

fn client_main(url: &str, sessions: usize, changes: usize, modern: bool) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fanout = Arc::new(Fanout {
        change: AtomicU64::new(0),
        reached: AtomicUsize::new(0),
        sessions,
        all: Notify::new(),
    });
    let stdin = std::io::stdin();
    let mut input = stdin.lock().lines();
    let mut stdout = std::io::stdout();
    let mut listening = Vec::new();
    let mut connect = |count: usize, clients: &mut Vec<_>| {
        rt.block_on(async {
            for _ in 0..count {
                let handler = Session {
                    fanout: Arc::clone(&fanout),
                    last: Arc::default(),
                };
                let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
                if modern {
                    let client = handler
                        .serve_with_lifecycle(
                            transport,
                            ClientLifecycleMode::Discover {
                                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                            },
                        )
                        .await
                        .unwrap();
                    if !clients.is_empty() {
                        // Idle: holds a listen stream open.
                        listening.push(
                            client
                                .listen(SubscriptionFilter::builder().tools_list_changed().build())
                                .await
                                .unwrap(),
                        );
                    }
                    clients.push(client);
                } else {
                    clients.push(handler.serve(transport).await.unwrap());
                }
            }
        });
    };
    let mut clients = Vec::with_capacity(sessions);
    connect(1, &mut clients);
    writeln!(stdout, "warm").unwrap();
    assert_eq!(input.next().unwrap().unwrap(), "more");
    connect(sessions - 1, &mut clients);
    writeln!(stdout, "connected").unwrap();
    assert_eq!(input.next().unwrap().unwrap(), "go");

    // One active session calls; the others sit idle.
    let (p50, p99) = rt.block_on(async {
        let active = Client::of(clients[0].peer().clone()).await;
        time_calls(&active, CALLS / 4, &mut Vec::new()).await;
        let mut samples = Vec::with_capacity(CALLS);
        time_calls(&active, CALLS, &mut samples).await;
        let latencies = Latencies::new(samples);
        (latencies.quantile(0.5), latencies.quantile(0.99))
    });

    let mut times = Vec::new();
    for change in 1..=changes as u64 {
        fanout.reached.store(0, Ordering::SeqCst);
        fanout.change.store(change, Ordering::SeqCst);
        let started = Instant::now();
        writeln!(stdout, "change").unwrap();
        assert_eq!(input.next().unwrap().unwrap(), "changed");
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(60), fanout.all.notified())
                .await
                .expect("every session sees the change within a minute");
        });
        times.push(started.elapsed());
        // Stragglers (a second notification of the same change) land now.
        std::thread::sleep(Duration::from_millis(100));
    }
    times.sort_unstable();
    let fanout = match (times.get(times.len() / 2), times.last()) {
        (Some(median), Some(max)) => format!(
            "{:.1} ms / {:.1} ms",
            median.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3
        ),
        _ => "—".to_owned(),
    };
    writeln!(stdout, "{} | {} | {fanout} |", micros(p50), micros(p99)).unwrap();
    drop(listening);
    rt.block_on(async {
        for client in clients {
            let _ = client.cancel().await;
        }
    });
}
