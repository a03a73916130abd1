//! Replicas on a real Redis server: registries that share a `RedisStore`
//! run a call with an invocation id once across all of them, whatever the
//! interleaving of retries (a property test); a retry joins its twin on
//! another replica, woken by the server's notification; the server killed
//! mid-call fails calls closed, and its restart (append-only file, fsync
//! always) loses no acknowledged settlement; rate limits hold for the sum;
//! the audit is one ordered log.
//!
//! Starts `redis-server` (Debian's package, which `.ci/run` installs) on a
//! free loopback port. Without it the tests say so and pass, except under
//! `CI=true`, where they fail.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stderr
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_surface::audit::{AuditKind, SharedAuditSink};
use agent_surface::policy::rate_limit;
use agent_surface::prelude::*;
use agent_surface::registry::RegistryBuilder;
use agent_surface::store::{Namespace, RedisStore, SharedStore};
use serde_json::json;
use tokio::sync::watch;

#[path = "support/redis_server.rs"]
#[allow(unreachable_pub, dead_code)]
mod redis_server;
use redis_server::Server;

/// A counter whose `bump` waits for its gate.
struct Counter {
    runs: AtomicUsize,
    gate: watch::Sender<bool>,
}

impl Counter {
    fn new(open: bool) -> Arc<Counter> {
        Arc::new(Counter {
            runs: AtomicUsize::new(0),
            gate: watch::channel(open).0,
        })
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

/// How many times the counter ran.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
struct Runs {
    runs: usize,
}

/// A counter the replicas each hold.
#[agent_component(type = "test.counter")]
impl Counter {
    /// Waits for the gate, then counts.
    #[action(effect = "local-state")]
    async fn bump(&self) -> Runs {
        let mut gate = self.gate.subscribe();
        let _ = gate.wait_for(|open| *open).await;
        Runs {
            runs: self.runs.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }
}

struct Replica {
    registry: Registry,
    counter: Arc<Counter>,
    _mounted: Mounted,
}

async fn replicas(server: &Server, n: usize, open: bool) -> Vec<Replica> {
    replicas_with(server, n, open, |builder, _| builder).await
}

/// `n` replicas, each on its own connection to the server, built with
/// `more` (given the replica's store).
async fn replicas_with(
    server: &Server,
    n: usize,
    open: bool,
    more: impl Fn(RegistryBuilder, &Arc<dyn SharedStore>) -> RegistryBuilder,
) -> Vec<Replica> {
    let mut replicas = Vec::new();
    for _ in 0..n {
        let store: Arc<dyn SharedStore> =
            Arc::new(RedisStore::connect(&server.url()).await.unwrap());
        let builder = Registry::builder().shared_store(Arc::clone(&store), namespace());
        let registry = more(builder, &store).build();
        let counter = Counter::new(open);
        let mounted = registry.mount(counter.clone()).unwrap();
        replicas.push(Replica {
            registry,
            counter,
            _mounted: mounted,
        });
    }
    replicas
}

fn namespace() -> Namespace {
    Namespace::new("counter").unwrap()
}

async fn bump(replica: &Replica, id: &str) -> InvocationResult {
    replica
        .registry
        .invoke(
            Invocation::new("view:test.counter.bump").invocation_id(id),
            InvokeOptions::consumer(Consumer::new(ConsumerKind::Test, "alice")),
        )
        .await
}

fn total(replicas: &[Replica]) -> usize {
    replicas.iter().map(|replica| replica.counter.runs()).sum()
}

#[tokio::test]
async fn as_ident_001_a_retry_on_another_replica_replays_from_redis() {
    let Some(server) = Server::start("replay") else {
        return;
    };
    let replicas = replicas(&server, 3, true).await;
    let first = bump(&replicas[0], "r-1").await;
    assert_eq!(first.output(), Some(&json!({ "runs": 1 })));
    for replica in &replicas[1..] {
        let retry = bump(replica, "r-1").await;
        assert_eq!(retry.output(), first.output());
    }
    assert_eq!(total(&replicas), 1);
}

#[tokio::test]
async fn as_ident_001_a_retry_joins_its_running_twin_on_another_replica_by_notification() {
    let Some(server) = Server::start("join") else {
        return;
    };
    let replicas = replicas(&server, 2, false).await;
    replicas[1].counter.gate.send_replace(true);
    let leader = {
        let registry = replicas[0].registry.clone();
        tokio::spawn(async move {
            registry
                .invoke(
                    Invocation::new("view:test.counter.bump").invocation_id("j-1"),
                    InvokeOptions::consumer(Consumer::new(ConsumerKind::Test, "alice")),
                )
                .await
        })
    };
    // The leader holds its claim once its handler waits on the gate.
    while replicas[0].counter.gate.receiver_count() == 0 {
        tokio::task::yield_now().await;
    }
    let joiner = {
        let registry = replicas[1].registry.clone();
        tokio::spawn(async move {
            registry
                .invoke(
                    Invocation::new("view:test.counter.bump").invocation_id("j-1"),
                    InvokeOptions::consumer(Consumer::new(ConsumerKind::Test, "alice")),
                )
                .await
        })
    };
    replicas[0].counter.gate.send_replace(true);
    let leader = leader.await.unwrap();
    let joiner = joiner.await.unwrap();
    assert!(leader.is_ok(), "{leader:?}");
    assert_eq!(joiner.output(), leader.output());
    assert_eq!(
        (replicas[0].counter.runs(), replicas[1].counter.runs()),
        (1, 0)
    );
}

#[tokio::test]
async fn as_ident_001_the_store_killed_mid_call_fails_closed_and_its_restart_keeps_settlements() {
    let Some(mut server) = Server::start("killed") else {
        return;
    };
    let replicas = replicas(&server, 2, true).await;
    // Settled before the crash: kept across the restart.
    assert!(bump(&replicas[0], "k-1").await.is_ok());
    server.kill();
    let refused = bump(&replicas[1], "k-2").await;
    let error = refused.error().expect("a call ran without its claim");
    assert_eq!(error.code(), ErrorCode::ExecutionFailed);
    assert_eq!(error.detail("reason"), Some(&json!("store-unavailable")));
    assert_eq!(error.retry(), Retry::AfterDelay);
    assert_eq!(total(&replicas), 1);
    server.restart();
    // The clients reconnect on their own; the acknowledged settlement is
    // there, so the retry replays it.
    let mut replay = bump(&replicas[1], "k-1").await;
    for _ in 0..50 {
        if replay.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        replay = bump(&replicas[1], "k-1").await;
    }
    assert_eq!(replay.output(), Some(&json!({ "runs": 1 })), "{replay:?}");
    // And the refused call runs once, now.
    assert!(bump(&replicas[1], "k-2").await.is_ok());
    assert_eq!(total(&replicas), 2);
}

#[tokio::test]
async fn as_policy_004_a_rate_limit_holds_for_the_sum_of_the_replicas() {
    let Some(server) = Server::start("limits") else {
        return;
    };
    let replicas = replicas_with(&server, 3, true, |builder, _| {
        builder.policy(rate_limit(4, Duration::from_secs(3600)))
    })
    .await;
    let mut allowed = 0;
    let mut refused = Vec::new();
    for n in 0..12 {
        let result = bump(&replicas[n % 3], &format!("l-{n}")).await;
        match result.error() {
            None => allowed += 1,
            Some(error) => refused.push(error.clone()),
        }
    }
    assert_eq!(allowed, 4, "three replicas allowed more than the one limit");
    assert!(refused.iter().all(|error| {
        error.code() == ErrorCode::RateLimited
            && error
                .detail("retryAfterMs")
                .and_then(serde_json::Value::as_u64)
                .is_some_and(|ms| ms > 0)
    }));
    assert_eq!(total(&replicas), 4);
}

#[tokio::test]
async fn the_replicas_keep_one_audit_log_with_one_record_per_call() {
    let Some(server) = Server::start("audit") else {
        return;
    };
    let replicas = replicas_with(&server, 3, true, |builder, store| {
        let sink = SharedAuditSink::spawn(Arc::clone(store), &namespace(), 1_000).unwrap();
        builder.audit_sink(Arc::new(sink))
    })
    .await;
    for n in 0..6 {
        assert!(bump(&replicas[n % 3], &format!("a-{n}")).await.is_ok());
    }
    // Retries on other replicas replay: no second record.
    for n in 0..6 {
        assert!(
            bump(&replicas[(n + 1) % 3], &format!("a-{n}"))
                .await
                .is_ok()
        );
    }
    let reader = RedisStore::connect(&server.url()).await.unwrap();
    let mut settled = Vec::new();
    for _ in 0..100 {
        settled = SharedAuditSink::read(&reader, &namespace(), 100)
            .await
            .unwrap()
            .into_iter()
            .filter(|event| event.kind == AuditKind::InvocationSettled)
            .filter_map(|event| event.invocation_id)
            .collect::<Vec<_>>();
        if settled.len() >= 6 {
            break;
        }
        // The sinks' writers append in the background.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Each replica's writer appends in its own order; the log holds
    // exactly one record of each call, whichever replica ran it.
    settled.sort();
    let expected: Vec<String> = (0..6).map(|n| format!("a-{n}")).collect();
    assert_eq!(settled, expected, "one record per call");
}

/// A counter that needs the person's approval.
struct Guarded {
    runs: AtomicUsize,
}

/// A guarded counter.
#[agent_component(type = "test.guarded")]
impl Guarded {
    /// Counts, once the person approves.
    #[action(effect = "local-state", confirmation = "required")]
    fn bump(&self) -> Runs {
        Runs {
            runs: self.runs.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }

    /// Counts by `by`, once the person approves.
    #[action(effect = "local-state", confirmation = "required")]
    fn add(&self, input: By) -> Runs {
        Runs {
            runs: self.runs.fetch_add(input.by, Ordering::SeqCst) + input.by,
        }
    }
}

/// How much to add.
#[agent_schema]
#[derive(Clone, Debug)]
struct By {
    by: usize,
}

#[tokio::test]
async fn as_confirm_005_a_principals_share_of_pending_requests_holds_for_the_sum_of_the_replicas() {
    let Some(server) = Server::start("share") else {
        return;
    };
    let mut registries = Vec::new();
    let mut mounted = Vec::new();
    for _ in 0..3 {
        let store: Arc<dyn SharedStore> =
            Arc::new(RedisStore::connect(&server.url()).await.unwrap());
        let registry = Registry::builder().shared_store(store, namespace()).build();
        mounted.push(
            registry
                .mount(Arc::new(Guarded {
                    runs: AtomicUsize::new(0),
                }))
                .unwrap(),
        );
        registries.push(registry);
    }
    let ask = |on: usize, who: &str, by: usize| {
        let registry = registries[on].clone();
        let who = Consumer::new(ConsumerKind::Test, who);
        async move {
            registry
                .invoke(
                    Invocation::new("view:test.guarded.add").input(json!({ "by": by })),
                    InvokeOptions::consumer(who),
                )
                .await
        }
    };
    let quota = registries[0]
        .limits()
        .max_pending_confirmations_per_consumer;
    let mut asked = Vec::new();
    for n in 0..quota {
        let result = ask(n % 3, "mallory", n).await;
        let error = result.error().expect("asked");
        assert_eq!(error.code(), ErrorCode::ConfirmationRequired, "{error:?}");
        let id = error
            .detail("confirmationId")
            .and_then(|id| id.as_str())
            .unwrap();
        asked.push((n % 3, id.to_owned()));
    }
    for on in 0..3 {
        let over = ask(on, "mallory", 99).await;
        let error = over.error().expect("refused");
        assert_eq!(error.code(), ErrorCode::RateLimited, "{error:?}");
        assert_eq!(error.detail("reason"), Some(&json!("queue-full")));
    }
    let other = ask(1, "alice", 1).await;
    assert_eq!(
        other.error().map(ErrorPayload::code),
        Some(ErrorCode::ConfirmationRequired)
    );
    // A denial on one replica gives the place back on every one.
    let (on, id) = &asked[0];
    let confirmations = registries[*on].confirmations();
    let shown = confirmations.find(id).unwrap().shown();
    let approver = confirmations
        .approver(agent_surface::confirmation::HOST_CHANNEL, "ada")
        .unwrap();
    confirmations.resolve(&shown, false, &approver).unwrap();
    let mut code = None;
    for _ in 0..200 {
        code = ask((on + 1) % 3, "mallory", 99)
            .await
            .error()
            .map(ErrorPayload::code);
        if code == Some(ErrorCode::ConfirmationRequired) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(code, Some(ErrorCode::ConfirmationRequired));
    assert_eq!(
        ask(*on, "mallory", 100)
            .await
            .error()
            .map(ErrorPayload::code),
        Some(ErrorCode::RateLimited)
    );
}

#[tokio::test]
async fn as_confirm_003_an_approval_given_on_one_replica_is_redeemed_once_on_another() {
    let Some(server) = Server::start("redeem") else {
        return;
    };
    let mut registries = Vec::new();
    let mut guarded = Vec::new();
    let mut mounted = Vec::new();
    for _ in 0..3 {
        let store: Arc<dyn SharedStore> =
            Arc::new(RedisStore::connect(&server.url()).await.unwrap());
        let registry = Registry::builder().shared_store(store, namespace()).build();
        let counter = Arc::new(Guarded {
            runs: AtomicUsize::new(0),
        });
        mounted.push(registry.mount(counter.clone()).unwrap());
        guarded.push(counter);
        registries.push(registry);
    }
    let call = |on: usize, confirmation: Option<&str>| {
        let registry = registries[on].clone();
        let mut invocation = Invocation::new("view:test.guarded.add").input(json!({ "by": 1 }));
        if let Some(id) = confirmation {
            invocation = invocation.confirmation(id);
        }
        async move {
            registry
                .invoke(
                    invocation,
                    InvokeOptions::consumer(Consumer::new(ConsumerKind::Test, "alice")),
                )
                .await
        }
    };
    let asked = call(1, None).await;
    let id = asked
        .error()
        .and_then(|error| error.detail("confirmationId"))
        .and_then(serde_json::Value::as_str)
        .unwrap()
        .to_owned();
    let confirmations = registries[1].confirmations();
    let shown = confirmations.find(&id).unwrap().shown();
    confirmations.approve(&shown).unwrap();
    // The retry lands on replica A once the holder published the approval.
    let mut ran = None;
    for _ in 0..200 {
        let result = call(0, Some(&id)).await;
        if result.is_ok() {
            ran = Some(result);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        ran.and_then(|r| r.output().cloned()),
        Some(json!({ "runs": 1 }))
    );
    for on in [2, 1, 0] {
        let again = call(on, Some(&id)).await;
        assert_eq!(
            again.error().and_then(|error| error.detail("reason")),
            Some(&json!("consumed")),
            "{again:?}"
        );
    }
    let runs: Vec<usize> = guarded
        .iter()
        .map(|counter| counter.runs.load(Ordering::SeqCst))
        .collect();
    assert_eq!(runs, [1, 0, 0]);
}

#[tokio::test]
async fn as_confirm_003_an_approval_through_replica_a_releases_the_call_held_on_replica_b() {
    let Some(server) = Server::start("approval") else {
        return;
    };
    let mut registries = Vec::new();
    for _ in 0..2 {
        let store: Arc<dyn SharedStore> =
            Arc::new(RedisStore::connect(&server.url()).await.unwrap());
        registries.push(
            Registry::builder()
                .shared_store(store, namespace())
                .approval_channel("console")
                .build(),
        );
    }
    let (a, b) = (&registries[0], &registries[1]);
    let guarded = Arc::new(Guarded {
        runs: AtomicUsize::new(0),
    });
    let _mounted = b.mount(guarded.clone()).unwrap();
    let alice = || InvokeOptions::consumer(Consumer::new(ConsumerKind::Test, "alice"));
    let asked = b
        .invoke(
            Invocation::new("view:test.guarded.bump").invocation_id("g-1"),
            alice(),
        )
        .await;
    let id = asked
        .error()
        .and_then(|error| error.detail("confirmationId"))
        .and_then(serde_json::Value::as_str)
        .unwrap()
        .to_owned();
    let held = tokio::spawn({
        let b = b.clone();
        let id = id.clone();
        async move { b.confirmations().wait_for(&id).await }
    });
    // Offered through the store (the relay runs in the background).
    let mut listed = Vec::new();
    for _ in 0..200 {
        listed = a.confirmations().pending_everywhere().await;
        if !listed.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(listed.len(), 1, "replica A does not list B's request");
    let approver = a.confirmations().approver("console", "ada").unwrap();
    let resolution = a
        .confirmations()
        .answer_anywhere(&listed[0].shown(), true, &approver, None)
        .await
        .unwrap();
    assert_eq!(resolution.approver.as_deref(), Some("ada"));
    assert_eq!(
        held.await.unwrap(),
        Some(agent_surface::confirmation::ConfirmationOutcome::Approved)
    );
    let ran = b
        .invoke(
            Invocation::new("view:test.guarded.bump")
                .invocation_id("g-1")
                .confirmation(&id),
            alice(),
        )
        .await;
    assert_eq!(ran.output(), Some(&json!({ "runs": 1 })));
    // Answered once: the request left every replica's list.
    let mut left = false;
    for _ in 0..200 {
        if a.confirmations().pending_everywhere().await.is_empty() {
            left = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(left, "the answered request is still offered");
}

#[tokio::test]
async fn as_ident_001_a_replica_restarted_keeps_every_acknowledged_settlement() {
    let Some(server) = Server::start("replica-restart") else {
        return;
    };
    let replicas = replicas(&server, 1, true).await;
    let first = bump(&replicas[0], "rr-1").await;
    assert!(first.is_ok(), "{first:?}");
    // The replica goes away (its registry, its connection, its window)…
    drop(replicas);
    // …and comes back: the settlement is the store's, so the retry replays.
    let again = replicas_fresh(&server).await;
    let retry = bump(&again[0], "rr-1").await;
    assert_eq!(retry.output(), first.output());
    assert_eq!(total(&again), 0, "the restarted replica ran it again");
}

async fn replicas_fresh(server: &Server) -> Vec<Replica> {
    replicas(server, 1, true).await
}

#[tokio::test]
async fn as_ident_001_at_its_quota_a_principals_oldest_settled_record_gives_way() {
    let Some(server) = Server::start("quota") else {
        return;
    };
    let replicas = replicas_with(&server, 2, true, |builder, _| {
        builder.limits(agent_surface::registry::Limits::default().shared_records_per_principal(2))
    })
    .await;
    for id in ["q-1", "q-2", "q-3"] {
        let result = bump(&replicas[0], id).await;
        assert!(result.is_ok(), "{result:?}");
    }
    // The newest two are kept: their retries replay on the other replica.
    for id in ["q-2", "q-3"] {
        assert!(bump(&replicas[1], id).await.is_ok());
    }
    assert_eq!(total(&replicas), 3);
}

#[tokio::test]
async fn a_server_that_may_evict_a_running_claim_is_refused() {
    let Some(server) = Server::start_with("evicts", &["--maxmemory-policy", "volatile-lru"]) else {
        return;
    };
    let refused = RedisStore::connect(&server.url()).await;
    assert!(
        matches!(
            refused,
            Err(agent_surface::store::RedisStoreError::Evicts(ref policy)) if policy == "volatile-lru"
        ),
        "{refused:?}"
    );
}

mod interleavings {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        /// Any interleaving of retries of one id over three replicas,
        /// some before the leader's handler runs, some while it runs, some
        /// after it settled: the handler runs once and every retry that got
        /// a result got the leader's.
        #[test]
        fn as_ident_001_retries_over_replicas_in_any_interleaving_run_once(
            plan in proptest::collection::vec((0usize..3, 0u8..3), 2..8),
        ) {
            let Some(server) = Server::start("interleavings") else {
                return Ok(());
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let replicas = Arc::new(replicas(&server, 3, false).await);
                let mut calls = Vec::new();
                for (at, (replica, stage)) in plan.iter().copied().enumerate() {
                    if stage == 1 && at > 0 {
                        // Some retries only after every gate opened.
                        for replica in replicas.iter() {
                            replica.counter.gate.send_replace(true);
                        }
                    }
                    let replicas = Arc::clone(&replicas);
                    calls.push(tokio::spawn(async move {
                        bump(&replicas[replica], "p-1").await
                    }));
                    if stage == 2 {
                        tokio::task::yield_now().await;
                    }
                }
                for replica in replicas.iter() {
                    replica.counter.gate.send_replace(true);
                }
                let mut outputs = Vec::new();
                for call in calls {
                    let result = call.await.unwrap();
                    if let Some(output) = result.output() {
                        outputs.push(output.clone());
                    } else {
                        // A joiner may only be told its twin did not settle.
                        let code = result.error().map(ErrorPayload::code);
                        assert!(
                            matches!(code, Some(ErrorCode::Timeout | ErrorCode::Cancelled)),
                            "{result:?}"
                        );
                    }
                }
                assert_eq!(total(&replicas), 1, "the call ran more than once");
                assert!(outputs.iter().all(|output| *output == json!({ "runs": 1 })));
            });
        }
    }
}
