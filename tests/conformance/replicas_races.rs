//! Approvals across replicas under races (AS-CONFIRM-003, -005): an
//! approval withdrawn on its holder stays unredeemable on every replica
//! even when a call that held its use lets go after the withdrawal; an
//! approval used on another replica while its holder's own call holds it
//! still ends there (audited, its place freed); a redemption whose wait
//! ran out as the store granted it gives the use back; places let go of
//! outside any runtime, after the one that claimed them ended, are given
//! back. The stores here wrap `MemoryStore` to delay what a network would.

use std::sync::Arc;
use std::time::Duration;

use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use agent_surface::store::{
    BoxFuture, Claim, Lease, MemoryStore, Namespace, SharedStore, StoreError, Taken,
};
use serde_json::json;

use crate::fixtures::{AnswerById, Probe, code, consumer, settle_tasks};

async fn call_as(registry: &Registry, who: &str, invocation: Invocation) -> InvocationResult {
    registry
        .invoke(invocation, InvokeOptions::consumer(consumer(who)))
        .await
}

async fn relayed() {
    for _ in 0..10 {
        settle_tasks().await;
    }
}

fn reason(result: &InvocationResult) -> Option<serde_json::Value> {
    result
        .error()
        .and_then(|error| error.detail("reason"))
        .cloned()
}

fn on(
    store: &Arc<dyn SharedStore>,
    limits: agent_surface::registry::Limits,
    n: usize,
) -> Vec<(Registry, Arc<Probe>, Mounted)> {
    (0..n)
        .map(|_| {
            let registry = Registry::builder()
                .shared_store(Arc::clone(store), Namespace::new("probe").unwrap())
                .approval_channel("console")
                .limits(limits)
                .build();
            let probe = Probe::new();
            let mounted = registry.mount(probe.clone()).unwrap();
            (registry, probe, mounted)
        })
        .collect()
}

fn guarded() -> Invocation {
    Invocation::new("view:test.probe.guarded").input(json!({ "ids": ["x"] }))
}

fn holds(registry: &Registry, n: usize) -> Vec<tokio::task::JoinHandle<InvocationResult>> {
    (0..n)
        .map(|k| {
            let r = registry.clone();
            tokio::spawn(async move {
                call_as(
                    &r,
                    "bob",
                    Invocation::new("view:test.probe.hold").invocation_id(format!("h{k}")),
                )
                .await
            })
        })
        .collect()
}

/// An approval withdrawn on its holder (or its holder disposed) while
/// another replica's call holds its use, queued, and that call is then
/// cancelled before it ran: the agent's next retry runs nowhere.
#[tokio::test]
async fn as_confirm_003_an_approval_withdrawn_while_another_replicas_call_holds_its_use_runs_nowhere_after()
 {
    let mut failures = Vec::new();
    for case in ["agent-left", "disposed"] {
        let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
        let mut replicas = on(&store, agent_surface::registry::Limits::default(), 2);
        let (b, probe_b, _mb) = replicas.pop().unwrap();
        let (a, _probe_a, _ma) = replicas.pop().unwrap();
        let id = crate::fixtures::confirmation_id(&call_as(&a, "alice", guarded()).await);
        a.confirmations().approve_id(&id).unwrap();
        relayed().await;
        // B's queue: one hold running, one queued; the agent's redemption queues.
        let hs = holds(&b, 1);
        settle_tasks().await;
        let queued = {
            let b = b.clone();
            let id = id.clone();
            tokio::spawn(async move { call_as(&b, "alice", guarded().confirmation(&id)).await })
        };
        relayed().await;
        assert!(!queued.is_finished());
        // The person withdraws (or the holder goes away).
        match case {
            "agent-left" => a.forget_consumer(&consumer("alice")),
            _ => a.dispose(),
        }
        relayed().await;
        // The agent cancels its queued call: its use is given back.
        queued.abort();
        let _ = queued.await;
        relayed().await;
        probe_b.open();
        for h in hs {
            let _ = h.await;
        }
        let runs_before = probe_b.runs();
        let retry = call_as(&b, "alice", guarded().confirmation(&id)).await;
        if retry.is_ok() || probe_b.runs() != runs_before {
            failures.push(case);
        }
    }
    assert!(
        failures.is_empty(),
        "withdrawn approvals ran elsewhere: {failures:?}"
    );
}

/// A store answering late, as one over a network does: claims of
/// approvals' uses wait `claim_delay` first while `slow` is set (a round
/// trip, as Redis has), and every `wait` answers `wait_delay` after it was
/// granted (the grant won at the server, its reply still in flight).
struct Delaying {
    inner: Arc<dyn SharedStore>,
    slow: std::sync::atomic::AtomicBool,
    claim_delay: Duration,
    wait_delay: Duration,
}

impl Delaying {
    fn new(inner: &Arc<dyn SharedStore>) -> Delaying {
        Delaying {
            inner: Arc::clone(inner),
            slow: false.into(),
            claim_delay: Duration::ZERO,
            wait_delay: Duration::ZERO,
        }
    }
}

impl SharedStore for Delaying {
    fn name(&self) -> &str {
        "delaying"
    }
    fn claim<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(async move {
            if key.contains(":cfu:") && self.slow.load(std::sync::atomic::Ordering::SeqCst) {
                tokio::time::sleep(self.claim_delay).await;
            }
            self.inner.claim(key, lease, ttl).await
        })
    }
    fn wait<'a>(
        &'a self,
        key: &'a str,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(async move {
            let found = self.inner.wait(key, lease, ttl).await;
            tokio::time::sleep(self.wait_delay).await;
            found
        })
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

/// The agent retries on the holder (its record reserved, the claim of its
/// use slow on the way) while its twin runs on another replica: the
/// holder's call is refused, and the record still ends there as used —
/// audited once, its principal's place freed.
#[tokio::test(start_paused = true)]
async fn as_confirm_005_an_approval_used_elsewhere_while_its_holder_holds_it_still_ends_there() {
    use agent_surface::audit::AuditKind;
    let memory: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let slow = Arc::new(Delaying {
        claim_delay: Duration::from_millis(200),
        ..Delaying::new(&memory)
    });
    let slow_dyn: Arc<dyn SharedStore> = slow.clone();
    let limits =
        agent_surface::registry::Limits::default().max_pending_confirmations_per_consumer(1);
    let a = on(&slow_dyn, limits, 1).pop().unwrap();
    let b = on(&memory, limits, 1).pop().unwrap();
    let id = crate::fixtures::confirmation_id(&call_as(&a.0, "alice", guarded()).await);
    a.0.confirmations().approve_id(&id).unwrap();
    relayed().await;
    slow.slow.store(true, std::sync::atomic::Ordering::SeqCst);
    // The agent's retry on the holder: reserved, its claim in flight.
    let on_a = {
        let r = a.0.clone();
        let id = id.clone();
        tokio::spawn(async move { call_as(&r, "alice", guarded().confirmation(&id)).await })
    };
    relayed().await;
    // Its twin on B runs meanwhile.
    let on_b = call_as(&b.0, "alice", guarded().confirmation(&id)).await;
    assert!(on_b.is_ok(), "{on_b:?}");
    relayed().await;
    let on_a = on_a.await.unwrap();
    assert_eq!(
        code(&on_a),
        Some(ErrorCode::ConfirmationInvalid),
        "{on_a:?}"
    );
    assert_eq!(reason(&on_a), Some(json!("consumed")));
    slow.slow.store(false, std::sync::atomic::Ordering::SeqCst);
    relayed().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    relayed().await;
    let consumed =
        a.0.audit_log()
            .into_iter()
            .filter(|e| e.kind == AuditKind::ConfirmationConsumed)
            .count();
    let outcome = a.0.confirmations().resolution(&id).map(|r| r.outcome);
    assert_eq!(
        outcome,
        Some(agent_surface::confirmation::ConfirmationOutcome::Approved)
    );
    assert!(a.0.confirmations().find(&id).is_none());
    let again = call_as(
        &a.0,
        "alice",
        Invocation::new("view:test.probe.guarded").input(json!({ "ids": ["y"] })),
    )
    .await;
    assert_eq!((a.1.runs(), b.1.runs()), (0, 1));
    assert_eq!(consumed, 1, "the use on B was never audited on its holder");
    assert_eq!(
        code(&again),
        Some(ErrorCode::ConfirmationRequired),
        "alice's place was not freed"
    );
}

/// A registry dropped on a host thread after the runtime that claimed its
/// places ended: the places are given back (on the store's own thread).
#[test]
fn as_confirm_005_places_let_go_of_outside_any_runtime_after_theirs_ended_are_given_back() {
    let limits =
        agent_surface::registry::Limits::default().max_pending_confirmations_per_consumer(2);
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let first = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let replicas = first.block_on(async {
        let replicas = on(&store, limits, 1);
        for n in 0..2 {
            let asked = call_as(
                &replicas[0].0,
                "mallory",
                Invocation::new("view:test.probe.guarded")
                    .input(json!({ "ids": [format!("d{n}")] })),
            )
            .await;
            let _ = crate::fixtures::confirmation_id(&asked);
        }
        replicas
    });
    drop(first);
    // The host drops its registry on its own thread, outside any runtime.
    drop(replicas);
    let second = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    second.block_on(async {
        let other = on(&store, limits, 1);
        // Given back on the store's own thread, concurrently with this one:
        // asked until the places are free (a bounded wait for a condition).
        let mut again = None;
        for _ in 0..500 {
            let asked = call_as(
                &other[0].0,
                "mallory",
                Invocation::new("view:test.probe.guarded").input(json!({ "ids": ["e"] })),
            )
            .await;
            let required = code(&asked) == Some(ErrorCode::ConfirmationRequired);
            again = Some(asked);
            if required {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let again = again.unwrap();
        assert_eq!(
            code(&again),
            Some(ErrorCode::ConfirmationRequired),
            "mallory's places were never given back: {again:?}"
        );
    });
}

/// The holder's own queued call holds the approval (reserved, its use
/// claimed) when it is withdrawn, and is then cancelled: the withdrawal
/// takes effect as the call lets go, and the retry on another replica runs
/// nothing.
#[tokio::test]
async fn as_confirm_003_an_approval_withdrawn_while_its_holder_holds_it_runs_nowhere_after() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let mut replicas = on(&store, agent_surface::registry::Limits::default(), 2);
    let (b, probe_b, _mb) = replicas.pop().unwrap();
    let (a, probe_a, _ma) = replicas.pop().unwrap();
    let id = crate::fixtures::confirmation_id(&call_as(&a, "alice", guarded()).await);
    a.confirmations().approve_id(&id).unwrap();
    relayed().await;
    let hs = holds(&a, 1);
    settle_tasks().await;
    let queued = {
        let a = a.clone();
        let id = id.clone();
        tokio::spawn(async move { call_as(&a, "alice", guarded().confirmation(&id)).await })
    };
    relayed().await;
    assert!(!queued.is_finished());
    a.forget_consumer(&consumer("alice"));
    relayed().await;
    queued.abort();
    let _ = queued.await;
    relayed().await;
    probe_a.open();
    for h in hs {
        let _ = h.await;
    }
    let retry = call_as(&b, "alice", guarded().confirmation(&id)).await;
    assert!(
        !retry.is_ok(),
        "a withdrawn approval ran on another replica"
    );
    assert_eq!(probe_b.runs(), 0);
}

/// A redemption's patience ends while the store's `wait` had already
/// granted it the approval's use (its answer still on the way): the use is
/// given back, so the approval still runs, once, on the next retry.
#[tokio::test(start_paused = true)]
async fn as_confirm_003_a_redemption_whose_wait_ran_out_as_it_was_granted_gives_the_use_back() {
    let memory: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let late: Arc<dyn SharedStore> = Arc::new(Delaying {
        wait_delay: Duration::from_secs(3),
        ..Delaying::new(&memory)
    });
    let a = on(&memory, agent_surface::registry::Limits::default(), 1)
        .pop()
        .unwrap();
    let b = on(&memory, agent_surface::registry::Limits::default(), 1)
        .pop()
        .unwrap();
    let c = on(&late, agent_surface::registry::Limits::default(), 1)
        .pop()
        .unwrap();
    let id = crate::fixtures::confirmation_id(&call_as(&a.0, "alice", guarded()).await);
    a.0.confirmations().approve_id(&id).unwrap();
    relayed().await;
    let hs = holds(&b.0, 1);
    settle_tasks().await;
    let queued = {
        let r = b.0.clone();
        let id = id.clone();
        tokio::spawn(async move { call_as(&r, "alice", guarded().confirmation(&id)).await })
    };
    relayed().await;
    let on_c = {
        let r = c.0.clone();
        let id = id.clone();
        tokio::spawn(async move { call_as(&r, "alice", guarded().confirmation(&id)).await })
    };
    relayed().await;
    // B's attempt is cancelled before it ran: its use given back; C's wait claims it.
    queued.abort();
    let _ = queued.await;
    let on_c = on_c.await.unwrap();
    b.1.open();
    for h in hs {
        let _ = h.await;
    }
    relayed().await;
    let retry = call_as(&b.0, "alice", guarded().confirmation(&id)).await;
    assert!(
        on_c.is_ok() || retry.is_ok(),
        "an approved, unused approval is refused everywhere"
    );
    assert!(!(on_c.is_ok() && retry.is_ok()), "it ran twice");
    // The guarded action ran once (the probe also counts the hold).
    let guarded_runs: usize = [&a.1, &b.1, &c.1]
        .iter()
        .map(|probe| probe.seen.lock().unwrap().len())
        .sum();
    assert_eq!(guarded_runs, 1);
}
