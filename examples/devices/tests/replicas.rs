//! Three replicas of the devices server (`--mcp http --store URL`) on one
//! real Redis server, behind a round-robin TCP proxy this test runs: an
//! authenticated agent's sessionless (2026-07-28) call, retried with the
//! same `agentSurface/invocationId` through the proxy, lands on each
//! replica in turn and runs once — every replica answers with the first
//! run's result, and the one shared audit log holds one record of it; the
//! same key with another request is a conflict; another key is another
//! call. With `--elicitation`, a confirmation asked in an input-required
//! round on one replica is answered by the client's retry on the next,
//! which carries the person's answer to the replica holding the request
//! and runs the call there, once.
//!
//! Starts `redis-server` (Debian's package, which `.ci/run` installs):
//! without it the test says so and passes, except under `CI=true`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stderr
)] // test code

mod support;

#[path = "../../../runtime/tests/support/redis_server.rs"]
#[allow(unreachable_pub, dead_code)]
mod redis_server;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_surface::audit::{AuditKind, SharedAuditSink};
use agent_surface::store::{Namespace, RedisStore};
use serde_json::{Value, json};
use support::{RawMcp, Running};

const ADMIN: &str = "t-admin-replicas-5f0c2a";

/// A devices replica (killed on drop) and the address it listens on.
fn replica(
    tokens: &std::path::Path,
    resource: &str,
    store: &str,
    extra: &[&str],
) -> (Running, String) {
    let mut args: Vec<std::ffi::OsString> = ["--mcp", "http", "127.0.0.1:0", "--auth", "tokens"]
        .map(Into::into)
        .into();
    args.push(tokens.into());
    args.extend(["--resource", resource, "--store", store].map(Into::into));
    args.extend(extra.iter().map(Into::into));
    let running = support::spawn(args);
    let address = running
        .url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    (running, address)
}

/// A round-robin TCP proxy: each connection goes to the next backend.
/// Returns its address and how many connections each backend got.
fn proxy(
    listener: std::net::TcpListener,
    backends: Vec<String>,
) -> (String, Arc<Vec<AtomicUsize>>) {
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let served: Arc<Vec<AtomicUsize>> =
        Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
    let counts = Arc::clone(&served);
    tokio::spawn(async move {
        let mut next = 0;
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            let index = next % backends.len();
            next += 1;
            counts[index].fetch_add(1, Ordering::SeqCst);
            let backend = backends[index].clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(&backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (address, served)
}

/// The devices example's selection tool, called with `key` as the
/// attempt's name.
async fn select(mcp: &RawMcp, id: u64, key: &str, rows: &[&str]) -> Value {
    let auth = format!("Bearer {ADMIN}");
    let reply = mcp
        .modern(
            json!(id),
            "tools/call",
            json!({
                "name": "view_devices__table__selectRows",
                "arguments": { "ids": rows },
                "_meta": { "agentSurface/invocationId": key },
            }),
            &[("authorization", &auth)],
        )
        .await;
    reply
        .response(&json!(id))
        .cloned()
        .unwrap_or_else(|| panic!("no response: {} {}", reply.status, reply.body))
}

/// Three replicas on one Redis server behind the round-robin proxy, each
/// started with `extra` arguments.
struct Cluster {
    redis: redis_server::Server,
    _replicas: Vec<(Running, String)>,
    /// The client, through the proxy: one connection per request, so each
    /// lands on the next replica.
    mcp: RawMcp,
    /// How many connections each replica got.
    served: Arc<Vec<AtomicUsize>>,
}

fn cluster(name: &str, extra: &[&str]) -> Option<Cluster> {
    let redis = redis_server::Server::start(name)?;
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens.json");
    std::fs::write(
        &tokens,
        json!({ "tokens": [
            { "token": ADMIN, "subject": "admin", "scopes": ["mcp", "devices:read", "devices:write"] }
        ]})
        .to_string(),
    )
    .unwrap();
    // The proxy's address is the endpoint's public one (the tokens'
    // audience): bound before the replicas start, served after.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let public = listener.local_addr().unwrap().to_string();
    let resource = format!("http://{public}/mcp");
    let replicas: Vec<(Running, String)> = (0..3)
        .map(|_| replica(&tokens, &resource, &redis.url(), extra))
        .collect();
    let backends = replicas
        .iter()
        .map(|(_, address)| address.clone())
        .collect();
    let (address, served) = proxy(listener, backends);
    let mcp = RawMcp {
        url: format!("http://{address}/mcp"),
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap(),
    };
    Some(Cluster {
        redis,
        _replicas: replicas,
        mcp,
        served,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_ident_001_a_retry_through_the_load_balancer_runs_once_on_three_replicas() {
    // The replicas live as long as the cluster is held.
    let Some(Cluster {
        redis,
        _replicas,
        mcp,
        served,
    }) = cluster("devices-replicas", &[])
    else {
        return;
    };
    let first = select(&mcp, 1, "pick-1", &["d2", "d3"]).await;
    assert!(first.get("result").is_some(), "{first}");
    assert_ne!(first["result"]["isError"], json!(true), "{first}");
    for id in 2..=6 {
        let retry = select(&mcp, id, "pick-1", &["d2", "d3"]).await;
        assert_eq!(
            retry["result"], first["result"],
            "a retry answered otherwise"
        );
    }
    let counts: Vec<usize> = served.iter().map(|n| n.load(Ordering::SeqCst)).collect();
    assert!(
        counts.iter().all(|n| *n >= 2),
        "the proxy did not spread the retries: {counts:?}"
    );
    // The same key with another request: a conflict, on any replica.
    let other = select(&mcp, 7, "pick-1", &["d4"]).await;
    assert_eq!(
        other["result"]["structuredContent"]["code"],
        json!("INVOCATION_CONFLICT"),
        "{other}"
    );
    // Another key: another call.
    let second = select(&mcp, 8, "pick-2", &["d4"]).await;
    assert_ne!(second["result"]["isError"], json!(true), "{second}");

    // One record per call in the one audit log the replicas share.
    let store = RedisStore::connect(&redis.url()).await.unwrap();
    let namespace = Namespace::new("devices").unwrap();
    let mut runs = Vec::new();
    for _ in 0..100 {
        runs = SharedAuditSink::read(&store, &namespace, 1_000)
            .await
            .unwrap()
            .into_iter()
            .filter(|event| event.kind == AuditKind::InvocationSettled)
            .filter_map(|event| event.invocation_id)
            .collect::<Vec<_>>();
        if runs.len() >= 2 {
            break;
        }
        // The replicas' audit writers append in the background.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    runs.sort();
    assert_eq!(runs, ["mcp-key-pick-1", "mcp-key-pick-2"], "{runs:?}");
}

/// A sessionless `tools/call` as the admin, declaring elicitation.
async fn call(mcp: &RawMcp, id: u64, name: &str, arguments: Value, more: Value) -> Value {
    let auth = format!("Bearer {ADMIN}");
    let mut params = json!({
        "name": name,
        "arguments": arguments,
        "_meta": { "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } },
    });
    if let (Some(params), Some(more)) = (params.as_object_mut(), more.as_object()) {
        params.extend(more.clone());
    }
    let reply = mcp
        .modern(json!(id), "tools/call", params, &[("authorization", &auth)])
        .await;
    reply
        .response(&json!(id))
        .cloned()
        .unwrap_or_else(|| panic!("no response: {} {}", reply.status, reply.body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_confirm_003_the_persons_answer_on_one_replica_releases_the_call_asked_on_another() {
    // The replicas live as long as the cluster is held.
    let Some(Cluster {
        redis,
        _replicas,
        mcp,
        served,
    }) = cluster("devices-replicas-approval", &["--elicitation"])
    else {
        return;
    };
    // Each replica's page has its own selection: the same row on each
    // (three requests, one per replica).
    for id in 1..=3 {
        let selected = call(
            &mcp,
            id,
            "view_devices__table__selectRows",
            json!({ "ids": ["d2"] }),
            json!({}),
        )
        .await;
        assert_ne!(selected["result"]["isError"], json!(true), "{selected}");
    }
    // Asked on one replica: an input-required round for the person.
    let asked = call(&mcp, 4, "domain_devices__disable", json!({}), json!({})).await;
    let state = asked["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("not asked: {asked}"))
        .to_owned();
    // The client's person approves; its retry lands on the next replica.
    let answer = json!({
        "requestState": state,
        "inputResponses": { "agentSurface/confirm": {
            "action": "accept", "content": { "approve": true } } },
    });
    let done = call(
        &mcp,
        5,
        "domain_devices__disable",
        json!({}),
        answer.clone(),
    )
    .await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({ "disabled": 1 }),
        "{done}"
    );
    // The same answer again, on the next replica: nothing runs twice.
    let again = call(&mcp, 6, "domain_devices__disable", json!({}), answer).await;
    assert_ne!(
        again["result"]["structuredContent"],
        json!({ "disabled": 1 }),
        "{again}"
    );
    let counts: Vec<usize> = served.iter().map(|n| n.load(Ordering::SeqCst)).collect();
    assert!(counts.iter().all(|n| *n >= 2), "{counts:?}");
    // One run of the disable in the one audit log.
    let store = RedisStore::connect(&redis.url()).await.unwrap();
    let namespace = Namespace::new("devices").unwrap();
    let mut ran = 0;
    for _ in 0..100 {
        ran = SharedAuditSink::read(&store, &namespace, 1_000)
            .await
            .unwrap()
            .into_iter()
            .filter(|event| event.kind == AuditKind::InvocationSettled)
            .filter(|event| event.capability_id.as_deref() == Some("domain:devices.disable"))
            .filter(|event| event.status.as_deref() == Some("ok"))
            .count();
        if ran >= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(ran, 1);
}
