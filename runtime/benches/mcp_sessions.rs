//! Sessions at scale: 100, 1,000 and 5,000 concurrent streamable-HTTP
//! sessions on loopback. For each count: the server's resident memory per
//! idle session, `tools/call` p50/p99 on one session while the others sit
//! idle, the time from a surface change (a mount or unmount) to the last
//! session's `notifications/tools/list_changed`, and what the changes cost:
//! each process's CPU per session per change.
//!
//! The same is measured on a bare rmcp server whose sessions each send
//! `notifications/tools/list_changed` when the bench signals a change (the
//! least an rmcp server does to announce one): what its server spends per
//! session per change is rmcp's, hyper's and the kernel's, and what
//! agent-surface's spends beyond it is the adapter's share (its registry's
//! mount or unmount included).
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
//! `cargo bench -p agent-surface --features mcp --bench mcp_sessions [-- --sizes 100,1000,5000] [--rounds 3]`

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

use support::{Client, Latencies, benching, cpu_ns, micros, noop_registry, time_calls};

/// Calls timed on the active session (after as many warm-up calls / 4).
const CALLS: usize = 2_000;
/// Surface changes timed per session count.
const CHANGES: usize = 30;

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
        || vec![100, 1000, 5000],
        |at| {
            args[at + 1]
                .split(',')
                .map(|n| n.parse().unwrap())
                .collect()
        },
    );
    let rounds: usize = args
        .iter()
        .position(|a| a == "--rounds")
        .map_or(3, |at| args[at + 1].parse().unwrap());
    let mut rows = Vec::new();
    let mut costs = Vec::new();
    for &sessions in &sizes {
        // Each run in a fresh server process (no memory freed by a previous
        // one is reused); the two servers alternate, the 2026-07-28 one runs
        // in the first round only.
        let sides = (0..rounds.max(1)).flat_map(|round| {
            let modern = (round == 0).then_some("modern");
            ["agent-surface", "bare"]
                .into_iter()
                .chain(modern)
                .map(move |side| (round, side))
        });
        for (round, side) in sides {
            let output = Command::new(std::env::current_exe().unwrap())
                .args(["--sessions-server", &sessions.to_string(), side])
                .stderr(Stdio::inherit())
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "the server for {sessions} sessions failed"
            );
            for line in String::from_utf8(output.stdout).unwrap().lines() {
                if let Some(row) = line.strip_prefix("row ") {
                    // The table shows the first round.
                    if round == 0 {
                        rows.push(row.to_owned());
                    }
                } else if let Some(cost) = line.strip_prefix("cost ") {
                    costs.push((side, sessions, Cost::parse(cost)));
                }
            }
        }
    }
    println!(
        "\n| server | sessions | server RSS per idle session | tools/call p50 | tools/call p99 | change → last list_changed (median / max of {CHANGES}) |"
    );
    println!("|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    println!(
        "\nCPU per session per change ({CHANGES} changes, each from its request to the last session's report; each side's best of {rounds} rounds), µs:\n"
    );
    println!(
        "| sessions | agent-surface server (of it kernel) | bare rmcp server (of it kernel) | agent-surface − bare (the adapter, its HTTP layer included) | clients, agent-surface / bare | RSS per idle session, agent-surface / bare (that round's) |"
    );
    println!("|---|---|---|---|---|---|");
    for &sessions in &sizes {
        // Each side's least disturbed round.
        let find = |side: &str| {
            costs
                .iter()
                .filter(|(s, n, _)| *s == side && *n == sessions)
                .map(|(_, _, cost)| *cost)
                .min_by_key(|cost| cost.server_ns)
        };
        let (Some(ours), Some(bare)) = (find("agent-surface"), find("bare")) else {
            continue;
        };
        let per = |ns: u64| ns as f64 / 1e3 / (sessions * CHANGES) as f64;
        println!(
            "| {sessions} | {:.2} ({:.2}) | {:.2} ({:.2}) | {:.2} | {:.2} / {:.2} | {} / {} |",
            per(ours.server_ns),
            per(ours.server_ns) * ours.kernel_share,
            per(bare.server_ns),
            per(bare.server_ns) * bare.kernel_share,
            per(ours.server_ns) - per(bare.server_ns),
            per(ours.client_ns),
            per(bare.client_ns),
            kilobytes(ours.rss_per_session),
            kilobytes(bare.rss_per_session),
        );
    }
}

fn kilobytes(bytes: Option<f64>) -> String {
    bytes.map_or_else(|| "—".to_owned(), |b| format!("{:.1} KiB", b / 1024.0))
}

/// What one server's changes cost (see `server_main`).
#[derive(Clone, Copy, Debug, Default)]
struct Cost {
    server_ns: u64,
    client_ns: u64,
    /// The server's system time over its user and system time.
    kernel_share: f64,
    rss_per_session: Option<f64>,
}

impl Cost {
    fn line(&self) -> String {
        format!(
            "{} {} {} {}",
            self.server_ns,
            self.client_ns,
            self.kernel_share,
            self.rss_per_session.unwrap_or(-1.0)
        )
    }

    fn parse(line: &str) -> Cost {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let rss: f64 = fields[3].parse().unwrap();
        Cost {
            server_ns: fields[0].parse().unwrap(),
            client_ns: fields[1].parse().unwrap(),
            kernel_share: fields[2].parse().unwrap(),
            rss_per_session: (rss >= 0.0).then_some(rss),
        }
    }
}

/// `pid`'s (user, system) CPU time in clock ticks.
fn cpu_split(pid: &str) -> (u64, u64) {
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
    (field(11), field(12))
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// One server (agent-surface's, or a bare rmcp one for comparison, which
/// announces a change to every session when told) under `sessions`
/// sessions. Prints its table row (`row …`) and what its changes cost
/// (`cost …`) on stdout.
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
    // every session holds its notification stream open on a connection,
    // and streams may hold half of the endpoint's three quarters.
    let server = McpServer::builder(&registry)
        .max_sessions(sessions + 8)
        .max_connections(3 * sessions + 64)
        .build();
    let stop = tokio_util::sync::CancellationToken::new();
    let (announce, announced) = tokio::sync::watch::channel(0u64);
    let (url, http) = if bare {
        let url = rt.block_on(support::http_rmcp_with(stop.clone(), move || {
            support::Bare::announcing(announced.clone())
        }));
        (url, None)
    } else {
        let http = rt.block_on(support::http_agent_surface(&server));
        (http.url(), Some(http))
    };
    // Listen streams report changes on their own streams, not to the
    // client handler: the fan-out is timed on sessions only.
    let changes = if modern { 0 } else { CHANGES };
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
    let rss_per_session =
        (sessions > 1).then(|| rss_bytes().saturating_sub(before) as f64 / (sessions - 1) as f64);
    let per_session = kilobytes(rss_per_session);
    writeln!(to_child, "go").unwrap();
    let mut extra = None;
    // CPU used by each process while each change fans out (its request to
    // the client's word that every session saw it; not the pauses between
    // changes): who pays for the delivery.
    let child_pid = child.id().to_string();
    let own_pid = std::process::id().to_string();
    let mut spent = Cost::default();
    let (mut user, mut system) = (0, 0);
    let mut from = None;
    loop {
        let request = line();
        match request.as_str() {
            "change" => {
                from = Some((cpu_ns(&own_pid), cpu_split(&own_pid), cpu_ns(&child_pid)));
                if bare {
                    announce.send_modify(|n| *n += 1);
                } else {
                    extra = match extra.take() {
                        None => Some(registry.mount(Arc::new(Extra)).unwrap()),
                        Some(mounted) => {
                            drop(mounted);
                            None
                        }
                    };
                }
                writeln!(to_child, "changed").unwrap();
            }
            "seen" => {
                let (server, (user_then, system_then), client) = from.take().unwrap();
                let (user_now, system_now) = cpu_split(&own_pid);
                spent.server_ns += cpu_ns(&own_pid).saturating_sub(server);
                spent.client_ns += cpu_ns(&child_pid).saturating_sub(client);
                user += user_now - user_then;
                system += system_now - system_then;
            }
            report => {
                let name = match side {
                    "bare" => "bare rmcp",
                    "modern" => "agent-surface, 2026-07-28 listeners",
                    _ => "agent-surface",
                };
                println!("row | {name} | {sessions} | {per_session} | {report}");
                if changes > 0 {
                    spent.kernel_share = system as f64 / (user + system).max(1) as f64;
                    spent.rss_per_session = rss_per_session;
                    println!("cost {}", spent.line());
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
    /// Notifications beyond a session's first of a change (reported: their
    /// work may land outside the CPU windows).
    extra: AtomicUsize,
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
        if self.last.swap(change, Ordering::SeqCst) == change {
            self.fanout.extra.fetch_add(1, Ordering::SeqCst);
        } else if self.fanout.reached.fetch_add(1, Ordering::SeqCst) + 1 == self.fanout.sessions {
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
        extra: AtomicUsize::new(0),
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
        writeln!(stdout, "seen").unwrap();
        // Stragglers (a second notification of the same change) land now.
        std::thread::sleep(Duration::from_millis(100));
    }
    times.sort_unstable();
    let extra = fanout.extra.load(Ordering::SeqCst);
    let fanout = match (times.get(times.len() / 2), times.last()) {
        (Some(median), Some(max)) => format!(
            "{:.1} ms / {:.1} ms",
            median.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3
        ),
        _ => "—".to_owned(),
    };
    if extra > 0 {
        eprintln!("{sessions} sessions: {extra} notifications beyond one per session per change");
    }
    writeln!(stdout, "{} | {} | {fanout} |", micros(p50), micros(p99)).unwrap();
    drop(listening);
    rt.block_on(async {
        for client in clients {
            let _ = client.cancel().await;
        }
    });
}
