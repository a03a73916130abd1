//! Scratch tests written during a review (deleted afterwards).
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

use agent_surface::audit::SharedAuditSink;
use agent_surface::confirmation::ResolveError;
use agent_surface::prelude::*;
use agent_surface::store::{
    BoxFuture, Claim, Fingerprint, Lease, MemoryStore, Namespace, SharedStore, StoreError, Taken,
};
use serde_json::json;

/// Ids to act on.
#[agent_schema]
#[derive(Clone, Debug)]
struct Ids {
    /// The ids.
    #[agent_schema(unbounded)]
    ids: Vec<String>,
}

#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
struct Runs {
    runs: usize,
}

struct Counter {
    runs: AtomicUsize,
}

impl Counter {
    fn new() -> Arc<Counter> {
        Arc::new(Counter {
            runs: AtomicUsize::new(0),
        })
    }
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

/// A counter.
#[agent_component(type = "test.counter")]
impl Counter {
    /// Counts.
    #[action(effect = "local-state")]
    fn bump(&self) -> Runs {
        Runs {
            runs: self.runs.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }

    /// Echoes.
    #[action(effect = "local-state")]
    fn echo(&self, input: Ids) -> Ids {
        input
    }

    /// Needs the user's approval.
    #[action(effect = "local-state", confirmation = "required")]
    fn guarded(&self, input: Ids) -> Runs {
        let _ = input;
        Runs {
            runs: self.runs.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }
}

fn ns() -> Namespace {
    Namespace::new("review").unwrap()
}

fn who(name: &str) -> InvokeOptions {
    InvokeOptions::consumer(Consumer::new(ConsumerKind::Test, name))
}

fn code(result: &InvocationResult) -> Option<ErrorCode> {
    result.error().map(ErrorPayload::code)
}

/// A MemoryStore whose chosen operations fail while `fail_*` counters are
/// positive (a network blip).
struct Flaky {
    inner: MemoryStore,
    fail_take: AtomicUsize,
    fail_watch_answer: AtomicUsize,
}

fn blip(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

impl SharedStore for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a Fingerprint,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        self.inner.claim(key, fingerprint, lease)
    }
    fn wait<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a Fingerprint,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        self.inner.wait(key, fingerprint, lease)
    }
    fn settle<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        record: &'a str,
        keep: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.settle(key, lease, record, keep)
    }
    fn release<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.release(key, lease)
    }
    fn take<'a>(
        &'a self,
        key: &'a str,
        limit: u32,
        window: Duration,
    ) -> BoxFuture<'a, Result<Taken, StoreError>> {
        if blip(&self.fail_take) {
            return Box::pin(async { Err(StoreError::Unavailable("blip".into())) });
        }
        self.inner.take(key, limit, window)
    }
    fn append<'a>(
        &'a self,
        key: &'a str,
        record: &'a str,
        keep: usize,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.append(key, record, keep)
    }
    fn records<'a>(
        &'a self,
        key: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        self.inner.records(key, count)
    }
    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.put(key, value, ttl)
    }
    fn put_new<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.put_new(key, value, ttl)
    }
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        self.inner.get(key)
    }
    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.remove(key)
    }
    fn watch<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<String, StoreError>> {
        if key.contains(":cfa:") && blip(&self.fail_watch_answer) {
            return Box::pin(async { Err(StoreError::Unavailable("blip".into())) });
        }
        self.inner.watch(key)
    }
    fn enroll<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.enroll(key, member, ttl)
    }
    fn unenroll<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.unenroll(key, member)
    }
    fn members<'a>(
        &'a self,
        key: &'a str,
        count: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        self.inner.members(key, count)
    }
}

fn flaky() -> Arc<Flaky> {
    Arc::new(Flaky {
        inner: MemoryStore::new(),
        fail_take: AtomicUsize::new(0),
        fail_watch_answer: AtomicUsize::new(0),
    })
}

// ---------------------------------------------------------------------
// R1: one agent fills the shared dedupe space; every other consumer's
// calls with an invocation id then fail closed, and calls without one run
// unaudited in the shared log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r1_one_agent_fills_the_store_and_denies_everyone_else() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let audit = SharedAuditSink::spawn(store.clone(), &ns(), 1_000).unwrap();
    let build = || {
        Registry::builder()
            .shared_store(store.clone(), ns())
            .audit_sink(Arc::new(
                SharedAuditSink::spawn(store.clone(), &ns(), 1_000).unwrap(),
            ))
            .build()
    };
    drop(audit);
    let (a, b) = (build(), build());
    let counter = Counter::new();
    let _m = b.mount(counter.clone()).unwrap();
    // Mallory: calls to a capability that does not exist, each with a new id.
    let started = std::time::Instant::now();
    let mut sent = 0usize;
    loop {
        let result = a
            .invoke(
                Invocation::new("view:nope.nothing.here").invocation_id(format!("m-{sent}")),
                who("mallory"),
            )
            .await;
        sent += 1;
        if result.error().and_then(|e| e.detail("reason")) == Some(&json!("store-unavailable")) {
            break;
        }
        assert!(sent < 200_000, "never filled");
    }
    eprintln!(
        "R1: store full after {sent} calls by one consumer in {:?}",
        started.elapsed()
    );
    // Alice, another consumer, on another replica.
    let alice = b
        .invoke(
            Invocation::new("view:test.counter.bump").invocation_id("alice-1"),
            who("alice"),
        )
        .await;
    eprintln!("R1: alice -> {:?}", alice.error());
    assert_eq!(counter.runs(), 0);
    // A call without an id needs no claim: it runs…
    let plain = b
        .invoke(Invocation::new("view:test.counter.bump"), who("mallory"))
        .await;
    assert!(plain.is_ok());
    assert_eq!(counter.runs(), 1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    // …and the shared audit log never gets it.
    let log = SharedAuditSink::read(&*store, &ns(), 1_000).await.unwrap();
    let bumped = log
        .iter()
        .filter(|event| format!("{event:?}").contains("test.counter.bump"))
        .count();
    eprintln!(
        "R1: audit events naming bump in the shared log: {bumped} (log len {})",
        log.len()
    );
    assert_eq!(
        code(&alice),
        None,
        "another consumer was denied service by mallory's ids"
    );
}

// ---------------------------------------------------------------------
// R2: a store blip during the rate limit's `take` settles EXECUTION_FAILED
// store-unavailable ("retry with the same invocation id"), which is then
// kept and replayed for the whole window, here and on other replicas.
#[tokio::test]
async fn r2_a_rate_limit_store_blip_is_replayed_for_the_window() {
    let store = flaky();
    let build = || {
        Registry::builder()
            .shared_store(store.clone() as Arc<dyn SharedStore>, ns())
            .policy(agent_surface::policy::rate_limit(
                100,
                Duration::from_secs(60),
            ))
            .build()
    };
    let (a, b) = (build(), build());
    let (ca, cb) = (Counter::new(), Counter::new());
    let _ma = a.mount(ca.clone()).unwrap();
    let _mb = b.mount(cb.clone()).unwrap();
    store.fail_take.store(1, Ordering::SeqCst);
    let bump = || Invocation::new("view:test.counter.bump").invocation_id("blip-1");
    let first = a.invoke(bump(), who("alice")).await;
    let error = first.error().unwrap();
    eprintln!(
        "R2 first: {} {:?} retry={:?}",
        error.code(),
        error.detail("reason"),
        error.retry()
    );
    // The store is back; the agent retries with the same id as told.
    let again_a = a.invoke(bump(), who("alice")).await;
    let again_b = b.invoke(bump(), who("alice")).await;
    eprintln!(
        "R2 retry on A: {:?}",
        again_a
            .error()
            .map(|e| (e.code(), e.detail("reason").cloned()))
    );
    eprintln!(
        "R2 retry on B: {:?}",
        again_b
            .error()
            .map(|e| (e.code(), e.detail("reason").cloned()))
    );
    assert_eq!(
        ca.runs() + cb.runs(),
        1,
        "the retry after the blip never runs"
    );
}

// ---------------------------------------------------------------------
// R3: after one refused remote answer, a request held on B can no longer
// be answered from any other replica (the watcher is one-shot).
#[tokio::test]
async fn r3_one_refused_remote_answer_locks_the_request_out_of_every_other_replica() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let build = |channel: &str| {
        Registry::builder()
            .shared_store(store.clone(), ns())
            .approval_channel(channel)
            .build()
    };
    let (a, b, c) = (build("console"), build("console"), build("kiosk"));
    let counter = Counter::new();
    let _m = b.mount(counter.clone()).unwrap();
    let asked = b
        .invoke(
            Invocation::new("view:test.counter.guarded").input(json!({"ids": ["x"]})),
            who("alice"),
        )
        .await;
    assert_eq!(code(&asked), Some(ErrorCode::ConfirmationRequired));
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    let shown = b.confirmations().pending()[0].shown();
    // A kiosk on replica C (a channel B does not declare) answers first: refused.
    let kiosk = c.confirmations().approver("kiosk", "eve").unwrap();
    let refused = c
        .confirmations()
        .answer_anywhere(&shown, true, &kiosk, None)
        .await;
    assert_eq!(refused, Err(ResolveError::NotPermitted));
    // The real person on replica A, through a channel B declares.
    let console = a.confirmations().approver("console", "ada").unwrap();
    let first = a
        .confirmations()
        .answer_anywhere(&shown, true, &console, None)
        .await;
    eprintln!(
        "R3 console answer right after: {first:?} (still pending on B: {})",
        b.confirmations().find(&shown.confirmation_id).is_some()
    );
    tokio::time::sleep(Duration::from_secs(61)).await;
    let later = a
        .confirmations()
        .answer_anywhere(&shown, true, &console, None)
        .await;
    eprintln!(
        "R3 console answer 61s later: {later:?} (still pending on B: {})",
        b.confirmations().find(&shown.confirmation_id).is_some()
    );
    assert!(
        first.is_ok() || later.is_ok(),
        "no valid remote answer was ever applied"
    );
}

// ---------------------------------------------------------------------
// R4: one failed `watch` (a store blip) ends the answer watcher for good.
#[tokio::test]
async fn r4_a_store_blip_kills_the_answer_watcher() {
    let store = flaky();
    store.fail_watch_answer.store(1, Ordering::SeqCst);
    let build = || {
        Registry::builder()
            .shared_store(store.clone() as Arc<dyn SharedStore>, ns())
            .approval_channel("console")
            .build()
    };
    let (a, b) = (build(), build());
    let counter = Counter::new();
    let _m = b.mount(counter.clone()).unwrap();
    let asked = b
        .invoke(
            Invocation::new("view:test.counter.guarded").input(json!({"ids": ["x"]})),
            who("alice"),
        )
        .await;
    assert_eq!(code(&asked), Some(ErrorCode::ConfirmationRequired));
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    let shown = b.confirmations().pending()[0].shown();
    let console = a.confirmations().approver("console", "ada").unwrap();
    let answer = a
        .confirmations()
        .answer_anywhere(&shown, true, &console, None)
        .await;
    eprintln!(
        "R4: {answer:?}; pending on B: {}",
        b.confirmations().find(&shown.confirmation_id).is_some()
    );
    assert!(answer.is_ok());
}

// ---------------------------------------------------------------------
// R5: MemoryStore::put over an expired entry of the same key, when the
// store is at its byte bound, underflows `inner.bytes - old`.
#[tokio::test]
async fn r5_memory_store_put_over_an_expired_key_at_the_bound() {
    let store = MemoryStore::with_bounds(10, 100);
    store
        .put("a", &"x".repeat(59), Duration::from_millis(1))
        .await
        .unwrap();
    store
        .put("b", &"y".repeat(30), Duration::from_secs(60))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let again = store
        .put("a", &"z".repeat(69), Duration::from_secs(60))
        .await;
    eprintln!("R5: {again:?}");
}

// ---------------------------------------------------------------------
// R6: two rate limits with the same parameters share one store bucket.
#[tokio::test]
async fn r6_two_equal_rate_limits_share_one_bucket_on_the_store() {
    let run = |shared: bool| async move {
        let mut builder = Registry::builder()
            .policy(agent_surface::policy::rate_limit(
                2,
                Duration::from_secs(60),
            ))
            .policy(agent_surface::policy::rate_limit(
                2,
                Duration::from_secs(60),
            ));
        if shared {
            builder = builder.shared_store(Arc::new(MemoryStore::new()), ns());
        }
        let registry = builder.build();
        let counter = Counter::new();
        let _m = registry.mount(counter.clone()).unwrap();
        for _ in 0..2 {
            let _ = registry
                .invoke(Invocation::new("view:test.counter.bump"), who("alice"))
                .await;
        }
        counter.runs()
    };
    let local = run(false).await;
    let shared = run(true).await;
    eprintln!("R6: allowed locally {local}, with a store {shared}");
    assert_eq!(local, shared);
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use agent_surface::store::RedisStore;
    use std::process::{Command, Stdio};

    struct Server(std::process::Child, u16);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    fn server() -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Server(child, port)
    }

    // R7: a caller's timeout of Duration::MAX ("no timeout") makes every
    // claim fail on Redis (PX overflows): the call never runs.
    #[tokio::test]
    async fn r7_duration_max_timeout_fails_every_claim_on_redis() {
        let server = server();
        let url = format!("redis://127.0.0.1:{}/", server.1);
        let store: Arc<dyn SharedStore> = Arc::new(RedisStore::connect(&url).await.unwrap());
        let registry = Registry::builder().shared_store(store, ns()).build();
        let counter = Counter::new();
        let _m = registry.mount(counter.clone()).unwrap();
        let result = registry
            .invoke(
                Invocation::new("view:test.counter.bump").invocation_id("forever-1"),
                who("alice").timeout(Duration::MAX),
            )
            .await;
        eprintln!("R7: {:?}", result.error());
        assert_eq!(
            counter.runs(),
            1,
            "a call with timeout Duration::MAX cannot run on Redis"
        );
    }

    // R8: Redis has no bound at all on dedupe records: count memory used
    // by one consumer's ids.
    #[tokio::test]
    async fn r8_redis_keeps_every_settled_record() {
        let server = server();
        let url = format!("redis://127.0.0.1:{}/", server.1);
        let store: Arc<dyn SharedStore> = Arc::new(RedisStore::connect(&url).await.unwrap());
        let registry = Registry::builder().shared_store(store, ns()).build();
        for n in 0..20_000 {
            let _ = registry
                .invoke(
                    Invocation::new("view:nope.nothing.here")
                        .invocation_id(format!("{n}-{}", "i".repeat(200))),
                    who("mallory"),
                )
                .await;
        }
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let keys: i64 = redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap();
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut conn)
            .await
            .unwrap();
        let used = info
            .lines()
            .find(|l| l.starts_with("used_memory:"))
            .unwrap_or("");
        eprintln!("R8: keys={keys} {used}");
    }
}

// R1b: with outputs near max_output_bytes the byte bound is reached after a
// few thousand calls; then calls without an id run but are not audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r1b_filling_the_store_by_bytes_hides_later_calls_from_the_shared_audit() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let sink = Arc::new(SharedAuditSink::spawn(store.clone(), &ns(), 100_000).unwrap());
    let registry = Registry::builder()
        .shared_store(store.clone(), ns())
        .audit_sink(sink.clone())
        .build();
    let counter = Counter::new();
    let _m = registry.mount(counter.clone()).unwrap();
    let big = "x".repeat(30_000);
    let mut sent = 0usize;
    loop {
        let result = registry
            .invoke(
                Invocation::new("view:test.counter.echo")
                    .input(json!({"ids": [big]}))
                    .invocation_id(format!("m-{sent}")),
                who("mallory"),
            )
            .await;
        sent += 1;
        if result.error().and_then(|e| e.detail("reason")) == Some(&json!("store-unavailable")) {
            break;
        }
        assert!(sent < 10_000, "never filled");
    }
    eprintln!("R1b: full after {sent} calls");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = SharedAuditSink::read(&*store, &ns(), 100_000).await.unwrap().len();
    for n in 0..5 {
        let plain = registry
            .invoke(Invocation::new("view:test.counter.bump"), who("mallory"))
            .await;
        assert!(plain.is_ok(), "{n}");
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let log = SharedAuditSink::read(&*store, &ns(), 100_000).await.unwrap();
    let bumped = log.iter().filter(|e| format!("{e:?}").contains("test.counter.bump")).count();
    eprintln!("R1b: bump ran {} times; audit len before {before} after {}; bump events in log {bumped}; lost {}", counter.runs(), log.len(), sink.lost());
    assert!(bumped > 0, "calls ran without a shared audit record");
}

struct Holder {
    runs: AtomicUsize,
    gate: tokio::sync::watch::Sender<bool>,
}

/// A holder.
#[agent_component(type = "test.holder")]
impl Holder {
    /// Counts, then waits for the gate.
    #[action(effect = "local-state", timeout = "60s")]
    async fn hold(&self) -> Runs {
        let runs = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        let mut gate = self.gate.subscribe();
        let _ = gate.wait_for(|open| *open).await;
        Runs { runs }
    }
}

#[cfg(feature = "redis")]
mod eviction {
    use super::*;
    use agent_surface::store::RedisStore;
    use std::process::{Command, Stdio};

    // R9: under a volatile-* eviction policy (e.g. a managed Redis's
    // default), one agent's flood of ids evicts another call's running
    // claim; its retry on another replica runs the handler a second time.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn r9_eviction_of_a_running_claim_runs_the_call_twice() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                   "--maxmemory", "4mb", "--maxmemory-policy", "volatile-lru"])
            .stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() { break; }
            std::thread::sleep(Duration::from_millis(25));
        }
        let url = format!("redis://127.0.0.1:{port}/");
        let mut replicas = Vec::new();
        for _ in 0..2 {
            let store: Arc<dyn SharedStore> = Arc::new(RedisStore::connect(&url).await.unwrap());
            let registry = Registry::builder().shared_store(store, ns()).build();
            let holder = Arc::new(Holder { runs: AtomicUsize::new(0), gate: tokio::sync::watch::channel(false).0 });
            let mounted = registry.mount(holder.clone()).unwrap();
            replicas.push((registry, holder, mounted));
        }
        let hold = || Invocation::new("view:test.holder.hold").invocation_id("alice-hold-1");
        let leader = {
            let registry = replicas[0].0.clone();
            tokio::spawn(async move { registry.invoke(hold(), who("alice")).await })
        };
        while replicas[0].1.runs.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Mallory floods with ids.
        for n in 0..30_000 {
            let _ = replicas[1].0.invoke(
                Invocation::new("view:nope.nothing.here").invocation_id(format!("{n}-{}", "i".repeat(200))),
                who("mallory"),
            ).await;
        }
        replicas[1].1.gate.send_replace(true);
        let retry = tokio::time::timeout(Duration::from_secs(5), replicas[1].0.invoke(hold(), who("alice"))).await;
        eprintln!("R9: retry on B -> {:?}", retry.as_ref().map(|r| r.error().map(|e| e.code())));
        replicas[0].1.gate.send_replace(true);
        let _ = leader.await;
        let runs = (replicas[0].1.runs.load(Ordering::SeqCst), replicas[1].1.runs.load(Ordering::SeqCst));
        eprintln!("R9: runs {runs:?}");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(runs.0 + runs.1, 1, "the call ran twice");
    }
}
