//! Attacks on the reliability guarantees (a hostile agent, a careless
//! host, a hostile clock), each asserting the guarantee it attacks.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use agent_surface::audit::{AuditEvent, AuditKind, AuditSink};
use agent_surface::clock::ManualClock;
use agent_surface::events::{MAX_QUEUED_EVENTS, SurfaceEvent};
use agent_surface::policy::rate_limit;
use agent_surface::prelude::*;
use agent_surface::toolset::Toolset;
use serde_json::json;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{
    Held, Probe, Worker, code, consumer, embedded_toolset, registry, settle_tasks, settled_codes,
    spawn_wait, work,
};

fn long_opts(who: &str) -> InvokeOptions {
    InvokeOptions::consumer(consumer(who)).timeout(Duration::from_secs(7200))
}

// ---------------------------------------------------------------------------
// 1a. A call that outlives the dedupe TTL (600 s) and is then dropped: its
// CANCELLED is filed under the time it *began*, so it is already expired
// and the retry with the same id runs the handler a second time.
#[tokio::test(start_paused = true)]
async fn as_ident_001_a_dropped_call_older_than_the_window_never_runs_twice() {
    let registry = registry();
    let slow = Worker::new();
    let _m = registry.mount(slow.clone()).unwrap();
    let began = slow.began.notified();
    let task = {
        let r = registry.clone();
        tokio::spawn(async move { r.invoke(work("long-1"), long_opts("tester")).await })
    };
    began.await;
    tokio::time::advance(Duration::from_secs(601)).await;
    task.abort();
    let _ = task.await;
    let retry = {
        let r = registry.clone();
        tokio::spawn(async move { r.invoke(work("long-1"), long_opts("tester")).await })
    };
    settle_tasks().await;
    let runs = slow.started();
    slow.gate.send_replace(true);
    let retry = retry.await.unwrap();
    assert_eq!(
        runs, 1,
        "handler ran {runs} times for one invocation id; retry: {retry:?}"
    );
}

// 1b. Same with a hostile clock: a host clock stepping forward during the
// call (no real time passes) voids the dedupe record of a *successful* call.
#[tokio::test]
async fn as_ident_001_a_clock_jump_during_a_call_never_voids_its_record() {
    let clock = Arc::new(ManualClock::at_ms(1_000_000));
    let registry = Registry::builder()
        .environment(Environment::Test)
        .clock(clock.clone())
        .build();
    let slow = Worker::new();
    let _m = registry.mount(slow.clone()).unwrap();
    let began = slow.began.notified();
    let task = {
        let r = registry.clone();
        tokio::spawn(async move { r.invoke(work("jump-1"), long_opts("tester")).await })
    };
    began.await;
    clock.advance(Duration::from_secs(601));
    slow.gate.send_replace(true);
    assert!(task.await.unwrap().is_ok());
    let again = registry.invoke(work("jump-1"), long_opts("tester")).await;
    assert!(again.is_ok());
    assert_eq!(
        slow.started(),
        1,
        "a retry of a settled id ran the handler again"
    );
}

// ---------------------------------------------------------------------------
// 1c. Dropping (aborting) a wait-mode toolset call while the person reads.
#[tokio::test(start_paused = true)]
async fn as_topo_003_aborting_a_wait_mode_call_withdraws_its_request() {
    let registry = registry();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let toolset = embedded_toolset(&registry);
    let call = spawn_wait(&toolset, "abort-wait-1", None);
    settle_tasks().await;
    assert_eq!(registry.confirmations().pending().len(), 1);
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    settle_tasks().await;
    let pending = registry.confirmations().pending();
    let codes = settled_codes(&registry, "abort-wait-1");
    assert!(
        pending.is_empty() && codes.last().copied().flatten() == Some(ErrorCode::Cancelled),
        "after abort: {} pending request(s) nobody waits for; settled codes {codes:?}",
        pending.len()
    );
}

// 1d. Two calls of the same agent with the same input share one pending
// request; cancelling one withdraws the other's (which was not cancelled).
#[tokio::test(start_paused = true)]
async fn as_topo_003_cancelling_one_waiter_leaves_the_request_of_another() {
    let registry = registry();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let toolset = embedded_toolset(&registry);
    let first = spawn_wait(&toolset, "call-A", None);
    settle_tasks().await;
    let token = CancellationToken::new();
    let second = spawn_wait(&toolset, "call-B", Some(token.clone()));
    settle_tasks().await;
    assert_eq!(
        registry.confirmations().pending().len(),
        1,
        "shared request"
    );
    token.cancel();
    assert_eq!(code(&second.await.unwrap()), Some(ErrorCode::Cancelled));
    settle_tasks().await;
    let still = registry.confirmations().pending();
    if let Some(request) = still.first() {
        registry.confirmations().approve(&request.shown()).unwrap();
    }
    let first = first.await.unwrap();
    assert!(
        first.is_ok(),
        "call-A was never cancelled, yet: {:?}",
        first.error()
    );
}

// 1e. Same tool-call id twice (a retry racing its original): the retry is
// cancelled, the original must run on.
#[tokio::test(start_paused = true)]
async fn as_topo_003_a_cancelled_duplicate_leaves_the_original_wait() {
    let registry = registry();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let toolset = embedded_toolset(&registry);
    let first = spawn_wait(&toolset, "dup-1", None);
    settle_tasks().await;
    let token = CancellationToken::new();
    let second = spawn_wait(&toolset, "dup-1", Some(token.clone()));
    settle_tasks().await;
    token.cancel();
    assert_eq!(code(&second.await.unwrap()), Some(ErrorCode::Cancelled));
    settle_tasks().await;
    if let Some(request) = registry.confirmations().pending().first() {
        registry.confirmations().approve(&request.shown()).unwrap();
    }
    let first = first.await.unwrap();
    assert!(
        first.is_ok(),
        "original dup-1 (not cancelled): {:?}",
        first.error()
    );
}

// ---------------------------------------------------------------------------
// 4a. forget_consumer while the host's presenter runs (after the orphan
// check, before the request is filed).
#[test]
fn as_ident_004_forget_while_the_presenter_runs_files_nothing() {
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let entered_tx = Mutex::new(Some(entered_tx));
    let released = Mutex::new(released);
    let registry = Registry::builder()
        .environment(Environment::Test)
        .confirmation_presenter(move |_| {
            if let Some(tx) = entered_tx.lock().unwrap().take() {
                let _ = tx.send(());
                let _ = released.lock().unwrap().recv();
            }
            None
        })
        .build();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let session = consumer("mcp-session-x");
    let ask = |id: &str, confirmation: Option<String>| {
        let mut inv = Invocation::new("view:test.probe.guarded")
            .input(json!({"ids": ["g"]}))
            .invocation_id(id);
        if let Some(c) = confirmation {
            inv = inv.confirmation(c);
        }
        inv
    };
    let caller = {
        let (registry, session, inv) = (registry.clone(), session.clone(), ask("p-1", None));
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(registry.invoke(inv, InvokeOptions::consumer(session)))
        })
    };
    entered.recv_timeout(Duration::from_secs(30)).unwrap();
    registry.forget_consumer(&session);
    release.send(()).unwrap();
    let first = caller.join().unwrap();
    let pending = registry.confirmations().pending();
    let leaked = pending.len();
    let mut ran = false;
    if let Some(request) = pending.first() {
        registry.confirmations().approve(&request.shown()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let later = rt.block_on(registry.invoke(
            ask("p-2", Some(request.confirmation_id.to_string())),
            InvokeOptions::consumer(session.clone()),
        ));
        ran = later.is_ok() && probe.runs() == 1;
    }
    assert!(
        leaked == 0 && !ran,
        "forgotten session's call returned {:?}; {leaked} request(s) survived the forget; \
         the same identity later redeemed it and the handler ran: {ran}",
        code(&first)
    );
}

// 4b. A forgotten consumer's in-flight call that carries no invocation id
// (no dedupe leadership, so nothing marks it orphaned) still asks.
#[tokio::test]
async fn as_ident_004_a_forgotten_call_without_an_id_asks_nobody() {
    let entered = Arc::new(Notify::new());
    let (open, gate) = watch::channel(false);
    let registry = Registry::builder()
        .environment(Environment::Test)
        .policy(Held {
            entered: Arc::clone(&entered),
            gate,
        })
        .build();
    let _m = registry.mount(Probe::new()).unwrap();
    let session = consumer("mcp-session-y");
    let inside = entered.notified();
    let task = {
        let (registry, session) = (registry.clone(), session.clone());
        tokio::spawn(async move {
            registry
                .invoke(
                    Invocation::new("view:test.probe.guarded").input(json!({"ids": ["g"]})),
                    InvokeOptions::consumer(session),
                )
                .await
        })
    };
    inside.await;
    registry.forget_consumer(&session);
    open.send_replace(true);
    let result = task.await.unwrap();
    assert!(
        registry.confirmations().pending().is_empty(),
        "forgotten session's call got {:?} and left a pending request",
        code(&result)
    );
}

// 1f. Unmount while an on_invoke policy holds the call: it should settle at
// once (COMPONENT_UNMOUNTED), not wait for the policy.
#[tokio::test(start_paused = true)]
async fn as_conc_010_unmount_while_a_policy_holds_the_call_settles_at_once() {
    let entered = Arc::new(Notify::new());
    let (open, gate) = watch::channel(false);
    let registry = Registry::builder()
        .environment(Environment::Test)
        .policy(Held {
            entered: Arc::clone(&entered),
            gate,
        })
        .build();
    let mounted = registry.mount(Probe::new()).unwrap();
    let inside = entered.notified();
    let task = {
        let registry = registry.clone();
        tokio::spawn(async move {
            registry
                .invoke(
                    Invocation::new("view:test.probe.poke").input(json!({"ids": ["g"]})),
                    InvokeOptions::consumer(consumer("tester")),
                )
                .await
        })
    };
    inside.await;
    drop(mounted);
    let settled = tokio::time::timeout(Duration::from_secs(3600), task).await;
    open.send_replace(true);
    assert!(
        settled.is_ok(),
        "the call still waited an hour after its component unmounted"
    );
}

// ---------------------------------------------------------------------------
// 5a. A listener panic whose payload panics when dropped.
struct Bomb;
impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            #[allow(clippy::panic)]
            {
                panic!("payload drop");
            }
        }
    }
}

#[test]
fn as_evt_001_a_panic_payload_that_panics_on_drop_is_contained() {
    let registry = registry();
    let _m = registry.mount(Probe::new()).unwrap();
    let armed = Arc::new(AtomicBool::new(true));
    let seen = Arc::new(AtomicUsize::new(0));
    let (a, s) = (Arc::clone(&armed), Arc::clone(&seen));
    let (delivered_tx, delivered) = mpsc::channel::<()>();
    let delivered_tx = Mutex::new(delivered_tx);
    let _l = registry.subscribe(move |_| {
        s.fetch_add(1, Ordering::SeqCst);
        let _ = delivered_tx.lock().unwrap().send(());
        if a.swap(false, Ordering::SeqCst) {
            std::panic::panic_any(Bomb);
        }
    });
    let read = || Invocation::new("view:test.probe.read");
    let first = {
        let registry = registry.clone();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(registry.invoke(read(), InvokeOptions::consumer(consumer("a"))))
        })
        .join()
    };
    let invoke_panicked = first.is_err();
    let before = seen.load(Ordering::SeqCst);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    while delivered.try_recv().is_ok() {}
    for n in 0..5 {
        let _ = rt
            .block_on(registry.invoke(read(), InvokeOptions::consumer(consumer(&format!("b{n}")))));
    }
    // Delivery goes on (on this thread or the delivery thread): an event
    // arrives; the timeout only guards against it never arriving.
    let _ = delivered.recv_timeout(Duration::from_secs(60));
    let after = seen.load(Ordering::SeqCst);
    assert!(
        !invoke_panicked && after > before,
        "invoke panicked: {invoke_panicked}; events delivered after: {} (backlog {})",
        after - before,
        registry.event_backlog()
    );
}

// 5b. The backlog passes MAX_QUEUED_EVENTS: the gap marker is pushed on
// top of a full-but-one queue without counting against the bound.
#[test]
fn as_evt_001_the_backlog_never_exceeds_its_bound() {
    let registry = registry();
    let _m = registry.mount(Probe::new()).unwrap();
    let free = Arc::new(AtomicBool::new(false));
    let (tokens_tx, tokens) = mpsc::channel::<()>();
    let tokens = Mutex::new(tokens);
    let (entered_tx, entered) = mpsc::channel::<()>();
    let entered_tx = Mutex::new(entered_tx);
    let f = Arc::clone(&free);
    let _l = registry.subscribe(move |_| {
        if f.load(Ordering::SeqCst) {
            return;
        }
        let _ = entered_tx.lock().unwrap().send(());
        let _ = tokens.lock().unwrap().recv();
    });
    let read = || Invocation::new("view:test.probe.read");
    let first = {
        let registry = registry.clone();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(registry.invoke(read(), InvokeOptions::consumer(consumer("first"))))
        })
    };
    entered.recv_timeout(Duration::from_secs(30)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for n in 0..(MAX_QUEUED_EVENTS / 2 + 10) {
        let _ = rt
            .block_on(registry.invoke(read(), InvokeOptions::consumer(consumer(&format!("c{n}")))));
    }
    // Let exactly one event through; the next one blocks the listener again.
    tokens_tx.send(()).unwrap();
    entered.recv_timeout(Duration::from_secs(30)).unwrap();
    let _ = rt.block_on(registry.invoke(read(), InvokeOptions::consumer(consumer("last"))));
    let most = registry.event_backlog();
    free.store(true, Ordering::SeqCst);
    for _ in 0..10 {
        let _ = tokens_tx.send(());
    }
    let _ = first.join();
    assert!(
        most <= MAX_QUEUED_EVENTS,
        "backlog {most} > {MAX_QUEUED_EVENTS}"
    );
}

// 5c. A call never pays for another call's events: a mount queues its
// events, then runs the host's audit sink before it delivers them; a call
// made meanwhile hands them (and its own) to the delivery thread instead of
// delivering them itself and waiting on a slow listener.
struct BlockingSink {
    armed: AtomicBool,
    entered: Mutex<Option<mpsc::Sender<()>>>,
    release: Mutex<mpsc::Receiver<()>>,
}
impl AuditSink for BlockingSink {
    fn record(&self, event: &AuditEvent) {
        if event.kind == AuditKind::Registration
            && self.armed.load(Ordering::SeqCst)
            && let Some(tx) = self.entered.lock().unwrap().take()
        {
            let _ = tx.send(());
            let _ = self.release.lock().unwrap().recv();
        }
    }
}

#[test]
fn as_evt_001_a_bystander_never_delivers_a_mounts_events() {
    let (entered_tx, entered) = mpsc::channel();
    let (release_tx, release) = mpsc::channel();
    let sink = Arc::new(BlockingSink {
        armed: AtomicBool::new(false),
        entered: Mutex::new(Some(entered_tx)),
        release: Mutex::new(release),
    });
    let registry = Registry::builder()
        .environment(Environment::Test)
        .audit_sink(sink.clone())
        .build();
    let _probe = registry.mount(Probe::new()).unwrap();
    // Only the next mount's registration record blocks.
    sink.armed.store(true, Ordering::SeqCst);
    let (slow_release_tx, slow_release) = mpsc::channel::<()>();
    let slow_release = Mutex::new(slow_release);
    let deliverer: Arc<Mutex<Option<String>>> = Arc::default();
    let who = Arc::clone(&deliverer);
    let _l = registry.subscribe(move |event| {
        if matches!(event, SurfaceEvent::ComponentRegistered { .. }) {
            *who.lock().unwrap() = std::thread::current().name().map(str::to_owned);
            // A listener that is slow on mounts (it builds UI).
            let _ = slow_release.lock().unwrap().recv();
        }
    });
    let mounter = {
        let registry = registry.clone();
        std::thread::spawn(move || registry.mount(Worker::new()).map(drop))
    };
    entered.recv_timeout(Duration::from_secs(60)).unwrap();
    let (done_tx, done) = mpsc::channel();
    let bystander = {
        let registry = registry.clone();
        std::thread::Builder::new()
            .name("bystander".into())
            .spawn(move || {
                let r = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(registry.invoke(
                        Invocation::new("view:test.probe.read"),
                        InvokeOptions::consumer(consumer("bystander")),
                    ));
                let _ = done_tx.send(());
                r
            })
            .unwrap()
    };
    // The listener stays stuck until released below: a bystander that
    // delivered the mount's events would never finish (60 s guard).
    let finished = done.recv_timeout(Duration::from_secs(60)).is_ok();
    let _ = release_tx.send(());
    let _ = slow_release_tx.send(());
    let _ = slow_release_tx.send(());
    assert!(bystander.join().unwrap().is_ok());
    let _ = mounter.join();
    assert!(
        finished,
        "an unrelated read waited on another call's (the mount's) event delivery; \
         ComponentRegistered was delivered on thread {:?}",
        deliverer.lock().unwrap()
    );
    assert_ne!(deliverer.lock().unwrap().as_deref(), Some("bystander"));
}

// ---------------------------------------------------------------------------
// 6a. rate_limit(1, 1h): an evicted identity resumes its exact debt; only
// once 10,000 other debtors were evicted after it (20,000 other pairs, each
// with a bucket of its own) is it forgotten — the documented bound.
#[tokio::test]
async fn as_policy_004_an_evicted_identity_resumes_its_exact_debt() {
    let clock = Arc::new(ManualClock::at_ms(1_000_000));
    let registry = Registry::builder()
        .environment(Environment::Test)
        .clock(clock.clone())
        .policy(rate_limit(1, Duration::from_secs(3600)))
        .build();
    let _m = registry.mount(Probe::new()).unwrap();
    let poke = |who: String| {
        registry.invoke(
            Invocation::new("view:test.probe.poke").input(json!({"ids": ["x"]})),
            InvokeOptions::consumer(consumer(&who)),
        )
    };
    assert!(poke("v".into()).await.is_ok());
    assert_eq!(code(&poke("v".into()).await), Some(ErrorCode::RateLimited));
    // Evicted and back, three times over, no time passing: still limited.
    for cycle in 0..3 {
        for n in 0..10_000 {
            let _ = poke(format!("other-{cycle}-{n}")).await;
        }
        assert_eq!(
            code(&poke("v".into()).await),
            Some(ErrorCode::RateLimited),
            "cycle {cycle}"
        );
    }
}

// ---------------------------------------------------------------------------
// 2. A clock that calls back into mutating methods, and runs an invoke on
// another thread (which needs every lock the reader might hold).
#[derive(Default)]
struct Meddler {
    registry: std::sync::OnceLock<Registry>,
    toolset: std::sync::OnceLock<Toolset>,
    mounted: std::sync::OnceLock<agent_surface::registry::Mounted>,
    inside: AtomicBool,
    calls: AtomicUsize,
    stuck: AtomicUsize,
}

impl std::fmt::Debug for Meddler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Meddler")
    }
}

impl agent_surface::clock::Clock for Meddler {
    fn now_ms(&self) -> u64 {
        if let Some(registry) = self.registry.get()
            && !self.inside.swap(true, Ordering::SeqCst)
        {
            self.calls.fetch_add(1, Ordering::SeqCst);
            registry.forget_consumer(&consumer("ghost"));
            if let Some(m) = self.mounted.get() {
                m.set_availability(
                    "gated",
                    agent_surface::registry::AvailabilityOverride::Clear,
                );
                m.invalidate();
                m.set_enabled(true);
                m.bump_version();
            }
            drop(registry.mount(Worker::new()));
            let _ = registry.snapshot(&agent_surface::snapshot::SnapshotOptions::default());
            let c = registry.confirmations();
            let _ = c.pending();
            c.expire_due();
            if let Some(t) = self.toolset.get() {
                let _ = t.tools();
                drop(t.subscribe(|_| {}));
                t.refresh();
            }
            let sub = registry.subscribe(|_| {});
            drop(sub);
            // Another thread needs the locks this reading might be under.
            let (tx, rx) = mpsc::channel();
            let r = registry.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let _ = rt.block_on(r.invoke(
                    Invocation::new("view:test.probe.read").invocation_id("meddle"),
                    InvokeOptions::consumer(consumer("ghost")),
                ));
                let _ = tx.send(());
            });
            if rx.recv_timeout(Duration::from_secs(10)).is_err() {
                self.stuck.fetch_add(1, Ordering::SeqCst);
            }
            self.inside.store(false, Ordering::SeqCst);
        }
        1_000_000
    }
}

#[test]
fn as_policy_001_a_clock_calling_mutating_methods_never_deadlocks() {
    let (done, finished) = mpsc::channel();
    let clock = Arc::new(Meddler::default());
    let c2 = Arc::clone(&clock);
    std::thread::spawn(move || {
        let clock = c2;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let registry = Registry::builder()
                .environment(Environment::Test)
                .clock(clock.clone())
                .policy(rate_limit(1000, Duration::from_secs(1)))
                .build();
            let _l = registry.subscribe(|_| {});
            let probe = Probe::new();
            let mounted = registry.mount(probe.clone()).unwrap();
            clock.registry.set(registry.clone()).unwrap();
            let toolset = embedded_toolset(&registry);
            let _ts = toolset.subscribe(|_| {});
            clock.toolset.set(toolset.clone()).unwrap();
            let _ = clock
                .mounted
                .set(registry.mount(Worker::new()).map_err(|_| ()).unwrap());
            let confirmations = registry.confirmations();
            let ask = |id: String| {
                registry.invoke(
                    Invocation::new("view:test.probe.guarded")
                        .input(json!({"ids": [id.clone()]}))
                        .invocation_id(id),
                    InvokeOptions::consumer(consumer("tester")),
                )
            };
            for (n, answer) in ["approve", "deny", "withdraw", "forget", "expire"]
                .iter()
                .enumerate()
            {
                let asked = ask(format!("c{n}")).await;
                assert_eq!(
                    code(&asked),
                    Some(ErrorCode::ConfirmationRequired),
                    "{answer}"
                );
                let pending = confirmations.pending();
                let request = pending.last().unwrap().clone();
                match *answer {
                    "approve" => {
                        confirmations.approve(&request.shown()).unwrap();
                        let retry = registry
                            .invoke(
                                Invocation::new("view:test.probe.guarded")
                                    .input(json!({"ids": [format!("c{n}")]}))
                                    .invocation_id(format!("c{n}"))
                                    .confirmation(&*request.confirmation_id),
                                InvokeOptions::consumer(consumer("tester")),
                            )
                            .await;
                        assert!(retry.is_ok(), "{retry:?}");
                    }
                    "deny" => drop(confirmations.deny(&request.shown())),
                    "withdraw" => {
                        confirmations
                            .withdraw_cancelled(&request.confirmation_id, &consumer("tester"));
                    }
                    "forget" => registry.forget_consumer(&consumer("tester")),
                    _ => drop(
                        confirmations.withdraw_registration(&request.registration_id, "unmounted"),
                    ),
                }
            }
            mounted.set_availability(
                "gated",
                agent_surface::registry::AvailabilityOverride::unavailable("x"),
            );
            mounted.invalidate();
            mounted.set_enabled(false);
            let _ = registry.snapshot(&agent_surface::snapshot::SnapshotOptions::default());
            let _ = toolset.tools();
            let waiting = spawn_wait(&toolset, "w1", None);
            settle_tasks().await;
            drop(mounted);
            let _ = waiting.await;
            toolset.dispose();
            registry.dispose();
        });
        let _ = done.send(());
    });
    let ok = finished.recv_timeout(Duration::from_secs(120)).is_ok();
    assert!(
        ok && clock.stuck.load(Ordering::SeqCst) == 0,
        "finished: {ok}; clock readings whose cross-thread invoke stalled: {} of {}",
        clock.stuck.load(Ordering::SeqCst),
        clock.calls.load(Ordering::SeqCst)
    );
}

// ---------------------------------------------------------------------------
// 5d. Listeners that mount/unmount, subscribe/unsubscribe and invoke, on
// the caller's thread and on the delivery thread; then the registry is
// dropped (the delivery thread's end is the dispatcher's own unit test).
#[test]
fn as_evt_001_busy_listeners_neither_deadlock_nor_leak_the_delivery_thread() {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let registry = registry();
        let _m = registry.mount(Probe::new()).unwrap();
        let weak_reg = Arc::new(Mutex::new(Some(registry.clone())));
        let depth = Arc::new(AtomicUsize::new(0));
        let order_ok = Arc::new(AtomicBool::new(true));
        let last_version = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let in_listener = Arc::new(AtomicUsize::new(0));
        let (w, d, o, lv, il) = (
            Arc::clone(&weak_reg),
            Arc::clone(&depth),
            Arc::clone(&order_ok),
            Arc::clone(&last_version),
            Arc::clone(&in_listener),
        );
        let _l = registry.subscribe(move |event| {
            if il.fetch_add(1, Ordering::SeqCst) != 0 {
                o.store(false, Ordering::SeqCst); // two deliveries at once
            }
            if let SurfaceEvent::SurfaceChanged { surface_version } = event {
                let v: u64 = surface_version.parse().unwrap();
                if lv.swap(v, Ordering::SeqCst) >= v {
                    o.store(false, Ordering::SeqCst);
                }
            }
            let registry = w.lock().unwrap().clone();
            if let Some(registry) = registry
                && d.fetch_add(1, Ordering::SeqCst) < 200
            {
                if matches!(event, SurfaceEvent::InvocationSettled { .. }) {
                    drop(registry.mount(Worker::new()));
                    drop(registry.subscribe(|_| {}));
                }
                if matches!(event, SurfaceEvent::ComponentRegistered { .. }) {
                    let r = registry.clone();
                    let _ = std::thread::spawn(move || {
                        tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .unwrap()
                            .block_on(r.invoke(
                                Invocation::new("view:test.probe.read"),
                                InvokeOptions::consumer(consumer("listener")),
                            ))
                    })
                    .join();
                }
                if d.load(Ordering::SeqCst) % 7 == 0 {
                    #[allow(clippy::panic)]
                    {
                        il.fetch_sub(1, Ordering::SeqCst);
                        panic!("listener panics");
                    }
                }
            }
            il.fetch_sub(1, Ordering::SeqCst);
        });
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let registry = registry.clone();
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    for n in 0..50 {
                        let _ = rt.block_on(registry.invoke(
                            Invocation::new("view:test.probe.read"),
                            InvokeOptions::consumer(consumer(&format!("t{t}-{n}"))),
                        ));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // Quiescent: a last mutation, then everything before it delivered.
        _m.bump_version();
        let last = registry.version();
        while last_version.load(Ordering::SeqCst) < last {
            std::thread::yield_now();
        }
        let ok = order_ok.load(Ordering::SeqCst);
        *weak_reg.lock().unwrap() = None;
        drop(registry);
        let _ = done.send(ok);
    });
    let ok = finished
        .recv_timeout(Duration::from_secs(120))
        .expect("deadlocked");
    assert!(ok, "events delivered concurrently or out of order");
}

// ---------------------------------------------------------------------------
// 8. Hidden vs nonexistent on the pre-cancelled, forgotten and cached paths.
struct HideSlow;
impl agent_surface::policy::Policy for HideSlow {
    fn name(&self) -> &str {
        "hideSlow"
    }
    fn on_discovery(
        &self,
        ctx: &agent_surface::policy::PolicyContext<'_>,
    ) -> agent_surface::policy::Decision {
        if ctx
            .capability_id()
            .as_str()
            .starts_with("view:test.worker.")
        {
            agent_surface::policy::Decision::Hide
        } else {
            agent_surface::policy::Decision::Expose
        }
    }
}

#[tokio::test]
async fn as_avail_002_hidden_is_nonexistent_on_the_cancellation_and_forget_paths() {
    let registry = Registry::builder()
        .environment(Environment::Test)
        .policy(HideSlow)
        .build();
    let slow = Worker::new();
    let _m = registry.mount(slow.clone()).unwrap();
    let seen = |result: &InvocationResult| {
        let mut v = serde_json::to_value(result).unwrap();
        if let Some(o) = v.as_object_mut() {
            o.remove("capabilityId");
        }
        v
    };
    for (capability, who) in [
        ("view:test.worker.work", "h"),
        ("view:hostile.none.work", "n"),
    ] {
        let _ = (capability, who);
    }
    let mut answers = Vec::new();
    for capability in ["view:test.worker.work", "view:hostile.none.work"] {
        let token = CancellationToken::new();
        token.cancel();
        let who = consumer("outsider");
        let inv = || {
            Invocation::new(capability)
                .input(json!({"ids": ["a"]}))
                .invocation_id("same")
        };
        let pre = registry
            .invoke(
                inv(),
                InvokeOptions::consumer(who.clone()).cancellation(token),
            )
            .await;
        let cached = registry
            .invoke(inv(), InvokeOptions::consumer(who.clone()))
            .await;
        let conflict = registry
            .invoke(
                inv().input(json!({"ids": ["b"]})),
                InvokeOptions::consumer(who.clone()),
            )
            .await;
        registry.forget_consumer(&who);
        let forgotten = registry
            .invoke(inv(), InvokeOptions::consumer(who.clone()))
            .await;
        registry.forget_consumer(&who);
        answers.push([seen(&pre), seen(&cached), seen(&conflict), seen(&forgotten)]);
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(slow.started(), 0);
}

// ---------------------------------------------------------------------------
// 6b. Displacement: approved and reserved requests survive a sybil flood;
// how much of a legitimate multi-request holder survives.
fn ask_as(
    registry: &Registry,
    who: &str,
    n: usize,
) -> impl std::future::Future<Output = InvocationResult> {
    registry.invoke(
        Invocation::new("view:test.probe.guarded").input(json!({"ids": [format!("{who}-{n}")]})),
        InvokeOptions::consumer(consumer(who)),
    )
}

#[tokio::test(start_paused = true)]
async fn as_confirm_005_sybils_never_touch_approved_or_reserved_requests() {
    let registry = registry();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let c = registry.confirmations();
    // The person's agent asks three times; one is approved, one reserved by a
    // call waiting in the instance queue behind `hold`.
    let mut ids = Vec::new();
    for n in 0..4 {
        let r = ask_as(&registry, "person", n).await;
        ids.push(crate::fixtures::confirmation_id(&r));
    }
    c.approve(&c.find(&ids[0]).unwrap().shown()).unwrap();
    c.approve(&c.find(&ids[1]).unwrap().shown()).unwrap();
    let holder = {
        let r = registry.clone();
        tokio::spawn(async move {
            r.invoke(
                Invocation::new("view:test.probe.hold"),
                InvokeOptions::consumer(consumer("x")),
            )
            .await
        })
    };
    settle_tasks().await;
    let reserved = {
        let r = registry.clone();
        let id = ids[1].clone();
        tokio::spawn(async move {
            r.invoke(
                Invocation::new("view:test.probe.guarded")
                    .input(json!({"ids": ["person-1"]}))
                    .confirmation(id),
                InvokeOptions::consumer(consumer("person")),
            )
            .await
        })
    };
    settle_tasks().await;
    let mut refused = 0;
    for n in 0..200 {
        let r = ask_as(&registry, &format!("sybil-{n}"), 0).await;
        refused += usize::from(code(&r) == Some(ErrorCode::RateLimited));
    }
    let person_pending = c
        .pending()
        .iter()
        .filter(|p| &*p.consumer_key == consumer("person").key().as_ref())
        .count();
    let retry_person = ask_as(&registry, "person", 2).await;
    probe.open();
    assert!(holder.await.unwrap().is_ok());
    assert!(
        reserved.await.unwrap().is_ok(),
        "reserved request was displaced"
    );
    let approved = registry
        .invoke(
            Invocation::new("view:test.probe.guarded")
                .input(json!({"ids": ["person-0"]}))
                .confirmation(ids[0].clone()),
            InvokeOptions::consumer(consumer("person")),
        )
        .await;
    assert!(
        approved.is_ok(),
        "approved request was displaced: {approved:?}"
    );
    println!(
        "person kept {person_pending} of 2 pending; its re-ask got {:?}; sybils refused: {refused}/200",
        code(&retry_person)
    );
}

#[tokio::test]
async fn as_policy_004_twenty_thousand_identities_in_one_instant_never_lock_out_a_newcomer() {
    let clock = Arc::new(ManualClock::at_ms(0));
    let registry = Registry::builder()
        .environment(Environment::Test)
        .clock(clock.clone())
        .policy(rate_limit(1, Duration::from_secs(3600)))
        .build();
    let _m = registry.mount(Probe::new()).unwrap();
    for n in 0..20_000 {
        let r = registry
            .invoke(
                Invocation::new("view:test.probe.poke").input(json!({"ids": ["x"]})),
                InvokeOptions::consumer(consumer(&format!("id-{n}"))),
            )
            .await;
        assert!(r.is_ok(), "identity {n} refused its first call");
    }
}

// 7b. set_enabled, set_availability(Unavailable/Clear), invalidate racing.
pub(crate) struct Lamp {
    on: AtomicBool,
}

/// A lamp.
#[agent_component(type = "hostile.lamp")]
impl Lamp {
    /// Only while on.
    #[action(effect = "local-state", when = is_on)]
    fn flip(&self) {}

    fn is_on(&self) -> bool {
        let on = self.on.load(Ordering::SeqCst);
        for _ in 0..(usize::from(on) * 3_000) {
            std::hint::spin_loop();
        }
        on
    }
}

#[test]
fn as_evt_001_the_last_event_matches_the_snapshot_under_enable_and_override_races() {
    use agent_surface::registry::AvailabilityOverride as O;
    let mut mismatches = Vec::new();
    for round in 0..30 {
        let registry = registry();
        let lamp = Arc::new(Lamp {
            on: AtomicBool::new(true),
        });
        let mounted = Arc::new(registry.mount(lamp.clone()).unwrap());
        let last: Arc<Mutex<Option<bool>>> = Arc::default();
        let seen_v = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (sink, sv) = (Arc::clone(&last), Arc::clone(&seen_v));
        let _l = registry.subscribe(move |event| match event {
            SurfaceEvent::AvailabilityChanged {
                available,
                capability_id,
                ..
            } if &**capability_id == "view:hostile.lamp.flip" => {
                *sink.lock().unwrap() = Some(*available);
            }
            SurfaceEvent::SurfaceChanged { surface_version } => {
                sv.store(surface_version.parse().unwrap_or(0), Ordering::SeqCst);
            }
            _ => {}
        });
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (lamp, mounted) = (Arc::clone(&lamp), Arc::clone(&mounted));
                std::thread::spawn(move || {
                    for n in 0..150usize {
                        match (n + t) % 5 {
                            0 => mounted.set_enabled(n % 3 != 0),
                            1 => {
                                mounted.set_availability("flip", O::unavailable("busy"));
                            }
                            2 => {
                                mounted.set_availability("flip", O::Clear);
                            }
                            3 => lamp.on.store(n % 2 == 0, Ordering::SeqCst),
                            _ => {}
                        }
                        mounted.invalidate();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        mounted.bump_version();
        let fin = registry.version();
        while seen_v.load(Ordering::SeqCst) < fin {
            std::thread::yield_now();
        }
        let available = registry
            .snapshot(&agent_surface::snapshot::SnapshotOptions::default())
            .components()
            .iter()
            .flat_map(|c| c.capabilities().collect::<Vec<_>>())
            .any(|c| c.id() == "view:hostile.lamp.flip" && c.available());
        if let Some(announced) = *last.lock().unwrap()
            && announced != available
        {
            mismatches.push(round);
        }
    }
    assert!(
        mismatches.is_empty(),
        "last event disagreed with snapshot in rounds {mismatches:?}"
    );
}
