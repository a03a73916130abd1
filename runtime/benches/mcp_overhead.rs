//! MCP overhead: the `tools/call` round trip of a no-op tool through
//! agent-surface's MCP server against a bare rmcp `#[tool]` server, with
//! rmcp's client on the same transport — an in-process duplex stream, and
//! streamable HTTP over loopback. Criterion gives the medians; then (under
//! `cargo bench` only) a sorted-latency pass gives p50 and p99, both sides
//! interleaved in blocks so machine noise falls on both alike.
//!
//! `cargo bench -p agent-surface --features mcp --bench mcp_overhead`

#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod support;

use std::time::Duration;

use agent_surface::mcp::McpServer;
use criterion::{Criterion, criterion_group};
use tokio_util::sync::CancellationToken;

use support::{
    Client, Latencies, benching, cpu_time, duplex_agent_surface, duplex_rmcp, http_agent_surface,
    http_agent_surface_on_axum, http_client, http_rmcp, micros, noop_registry, time_calls,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The four clients: (transport, side, client).
struct Clients {
    pairs: Vec<(&'static str, Client, Client)>,
    _keep: Box<dyn std::any::Any>,
}

fn connect(rt: &tokio::runtime::Runtime) -> Clients {
    rt.block_on(async {
        let (registry, mounted) = noop_registry();
        let server = McpServer::builder(&registry).build();
        let duplex = (
            "in-process duplex",
            duplex_agent_surface(&server).await,
            duplex_rmcp().await,
        );
        let http = http_agent_surface(&server).await;
        let stop = CancellationToken::new();
        let bare_url = http_rmcp(stop.clone()).await;
        let loopback = (
            "streamable HTTP, loopback",
            http_client(&http.url()).await,
            http_client(&bare_url).await,
        );
        let on_axum = http_agent_surface_on_axum(&server, stop.clone()).await;
        let axum_pair = (
            "streamable HTTP, loopback, both on axum::serve",
            http_client(&on_axum).await,
            http_client(&bare_url).await,
        );
        Clients {
            pairs: vec![duplex, loopback, axum_pair],
            _keep: Box::new((registry, mounted, server, http, stop.drop_guard())),
        }
    })
}

fn overhead(c: &mut Criterion) {
    let rt = runtime();
    let clients = connect(&rt);
    let mut group = c.benchmark_group("tools/call no-op");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (transport, ours, bare) in &clients.pairs {
        group.bench_function(format!("{transport} / agent-surface"), |b| {
            b.to_async(&rt).iter(|| ours.call());
        });
        group.bench_function(format!("{transport} / bare rmcp"), |b| {
            b.to_async(&rt).iter(|| bare.call());
        });
    }
    group.finish();
}

/// p50 and p99 of `ROUNDS × BLOCK` calls per side, the sides alternating.
fn percentiles() {
    const ROUNDS: usize = 40;
    const BLOCK: usize = 250;
    let rt = runtime();
    let clients = connect(&rt);
    println!("\n| transport | side | calls | p50 | p99 | CPU per call (both ends) |");
    println!("|---|---|---|---|---|---|");
    for (transport, ours, bare) in &clients.pairs {
        let (a, b, cpu_a, cpu_b) = rt.block_on(async {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let (mut cpu_a, mut cpu_b) = (Duration::ZERO, Duration::ZERO);
            time_calls(ours, BLOCK, &mut Vec::new()).await;
            time_calls(bare, BLOCK, &mut Vec::new()).await;
            for _ in 0..ROUNDS {
                let started = cpu_time();
                time_calls(ours, BLOCK, &mut a).await;
                let middle = cpu_time();
                time_calls(bare, BLOCK, &mut b).await;
                cpu_a += middle - started;
                cpu_b += cpu_time() - middle;
            }
            (Latencies::new(a), Latencies::new(b), cpu_a, cpu_b)
        });
        let calls = (ROUNDS * BLOCK) as u32;
        for (side, l, cpu) in [("agent-surface", &a, cpu_a), ("bare rmcp", &b, cpu_b)] {
            println!(
                "| {transport} | {side} | {} | {} | {} | {} |",
                l.len(),
                micros(l.quantile(0.5)),
                micros(l.quantile(0.99)),
                micros(cpu / calls),
            );
        }
        eprintln!(
            "{transport}: list_changed received during the calls: agent-surface {}, bare rmcp {}",
            ours.list_changed.load(std::sync::atomic::Ordering::Relaxed),
            bare.list_changed.load(std::sync::atomic::Ordering::Relaxed)
        );
        println!(
            "| {transport} | ratio | | {:.2}× | {:.2}× | {:.2}× |",
            a.quantile(0.5).as_secs_f64() / b.quantile(0.5).as_secs_f64(),
            a.quantile(0.99).as_secs_f64() / b.quantile(0.99).as_secs_f64(),
            cpu_a.as_secs_f64() / cpu_b.as_secs_f64(),
        );
    }
}

criterion_group!(benches, overhead);

/// `--calls-only <pair> <side> <n>`: only `n` calls of one side (0 is
/// agent-surface, 1 bare rmcp) of one pair, for `perf stat` per-call counts.
fn calls_only(args: &[String]) {
    let (pair, side, n): (usize, usize, usize) = (
        args[0].parse().unwrap(),
        args[1].parse().unwrap(),
        args[2].parse().unwrap(),
    );
    let rt = runtime();
    let clients = connect(&rt);
    let (_, ours, bare) = &clients.pairs[pair];
    let client = if side == 0 { ours } else { bare };
    let mut samples = Vec::with_capacity(n);
    rt.block_on(time_calls(client, n, &mut samples));
    let latencies = Latencies::new(samples);
    println!(
        "p50 {} p99 {}",
        micros(latencies.quantile(0.5)),
        micros(latencies.quantile(0.99))
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--calls-only") {
        calls_only(&args[at + 1..]);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    if benching() {
        percentiles();
    }
}
