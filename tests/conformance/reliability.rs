//! Guarantees under the second round of attack, one class per test group:
//! cancellation is a settlement (AS-IDENT-001, AS-CONC-012, AS-TOPO-003,
//! AS-CONC-010), host callbacks never under a lock and time that never runs
//! backwards (AS-POLICY-001), forgetting forgets in-flight work
//! (AS-IDENT-004), a bounded event queue where no caller pays for others
//! and the last event tells the truth (AS-EVT-001), and fairness that
//! survives many identities (AS-POLICY-004, AS-CONFIRM-005).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use agent_surface::audit::AuditKind;
use agent_surface::clock::{Clock, ManualClock};
use agent_surface::events::{MAX_QUEUED_EVENTS, SurfaceEvent};
use agent_surface::policy::rate_limit;
use agent_surface::prelude::*;
use agent_surface::registry::Limits;
use agent_surface::toolset::Toolset;
use serde_json::json;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{
    Held, Probe, Worker, code, consumer, embedded_toolset, registry, settle_tasks, settled_codes,
    spawn_wait, work,
};

// ---------------------------------------------------------------------------
// 1. Cancellation is a settlement.

#[tokio::test]
async fn as_ident_001_a_dropped_call_settles_cancelled_and_its_retry_never_runs_twice() {
    let registry = registry();
    let worker = Worker::new();
    let _mounted = registry.mount(worker.clone()).unwrap();
    let as_tester = || InvokeOptions::consumer(consumer("tester"));
    let began = worker.began.notified();
    let task = {
        let registry = registry.clone();
        tokio::spawn(async move { registry.invoke(work("drop-1"), as_tester()).await })
    };
    began.await;
    // A joiner of the same request, waiting on the leader.
    let joiner = {
        let registry = registry.clone();
        tokio::spawn(async move { registry.invoke(work("drop-1"), as_tester()).await })
    };
    settle_tasks().await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_eq!(code(&joiner.await.unwrap()), Some(ErrorCode::Cancelled));
    // Terminal and cached: the retry with the same id gets CANCELLED.
    let retry = registry.invoke(work("drop-1"), as_tester()).await;
    assert_eq!(code(&retry), Some(ErrorCode::Cancelled));
    assert_eq!(worker.started(), 1, "the handler ran once");
    assert_eq!(
        settled_codes(&registry, "drop-1"),
        [Some(ErrorCode::Cancelled)]
    );
    // A new id is a new attempt.
    worker.gate.send_replace(true);
    let fresh = registry.invoke(work("drop-2"), as_tester()).await;
    assert!(fresh.is_ok(), "{fresh:?}");
    assert_eq!(worker.started(), 2);
}

#[tokio::test]
async fn as_conc_012_a_pre_cancelled_call_asks_the_person_nothing() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let token = CancellationToken::new();
    token.cancel();
    for capability in ["view:test.probe.guarded", "view:test.nothing.here"] {
        let result = registry
            .invoke(
                Invocation::new(capability)
                    .input(json!({"ids": ["x"]}))
                    .invocation_id("pre-1"),
                InvokeOptions::consumer(consumer(capability)).cancellation(token.clone()),
            )
            .await;
        assert_eq!(code(&result), Some(ErrorCode::Cancelled), "{capability}");
    }
    assert!(registry.confirmations().pending().is_empty());
    assert_eq!(probe.runs(), 0);
}

#[tokio::test(start_paused = true)]
async fn as_topo_003_a_call_cancelled_while_the_person_reads_is_audited_and_withdrawn() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let toolset = embedded_toolset(&registry);
    let token = CancellationToken::new();
    let call = spawn_wait(&toolset, "wait-1", Some(token.clone()));
    settle_tasks().await;
    let pending = registry.confirmations().pending();
    assert_eq!(pending.len(), 1);
    token.cancel();
    let result = call.await.unwrap();
    assert_eq!(code(&result), Some(ErrorCode::Cancelled));
    assert!(
        registry.confirmations().pending().is_empty(),
        "nobody waits"
    );
    let withdrawn = registry
        .confirmations()
        .resolution(&pending[0].confirmation_id)
        .unwrap();
    assert_eq!(withdrawn.reason, Some("cancelled"));
    assert_eq!(
        settled_codes(&registry, "wait-1").last().copied().flatten(),
        Some(ErrorCode::Cancelled)
    );
    assert_eq!(probe.runs(), 0);
}

#[tokio::test(start_paused = true)]
async fn as_conc_010_unmount_while_the_person_reads_settles_at_once() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let toolset = embedded_toolset(&registry);
    let call = spawn_wait(&toolset, "wait-1", None);
    settle_tasks().await;
    assert_eq!(registry.confirmations().pending().len(), 1);
    let before = tokio::time::Instant::now();
    drop(mounted);
    let result = call.await.unwrap();
    assert_eq!(tokio::time::Instant::now(), before, "no time passed");
    assert_eq!(code(&result), Some(ErrorCode::ComponentUnmounted));
    assert!(registry.confirmations().pending().is_empty());
    assert_eq!(probe.runs(), 0);
}

// ---------------------------------------------------------------------------
// 2. Host callbacks never run under a lock; 3. time never runs backwards.

/// A clock that calls back into every public registry method it can reach.
#[derive(Default)]
struct Reentrant {
    registry: OnceLock<Registry>,
    toolset: OnceLock<Toolset>,
    now: AtomicUsize,
    inside: AtomicBool,
    calls: AtomicUsize,
}

impl std::fmt::Debug for Reentrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reentrant")
    }
}

impl Clock for Reentrant {
    fn now_ms(&self) -> u64 {
        if let Some(registry) = self.registry.get()
            && !self.inside.swap(true, Ordering::SeqCst)
        {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let confirmations = registry.confirmations();
            let pending = confirmations.pending();
            for request in &pending {
                let _ = confirmations.find(&request.confirmation_id);
                let _ = confirmations.resolution(&request.confirmation_id);
            }
            let _ = registry.snapshot(&SnapshotOptions::default());
            let _ = registry.audit_log();
            let _ = registry.dedupe_len();
            let _ = registry.event_backlog();
            let _ = registry.version();
            let _ = registry.host_context();
            let _ = registry.now_ms();
            if let Some(toolset) = self.toolset.get() {
                let _ = toolset.tools();
                drop(toolset.subscribe(|_| {}));
            }
            self.inside.store(false, Ordering::SeqCst);
        }
        self.now.load(Ordering::SeqCst) as u64
    }
}

#[test]
fn as_policy_001_a_clock_calling_back_into_the_registry_never_deadlocks() {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let clock = Arc::new(Reentrant::default());
            clock.now.store(1_000_000, Ordering::SeqCst);
            let registry = Registry::builder()
                .environment(Environment::Test)
                .clock(clock.clone())
                .build();
            clock.registry.set(registry.clone()).unwrap();
            let _listening = registry.subscribe(|_| {});
            let probe = Probe::new();
            let mounted = registry.mount(probe.clone()).unwrap();
            // A toolset whose first subscription builds its catalog (a
            // snapshot reads the clock) while the clock calls back into it.
            let toolset = embedded_toolset(&registry);
            clock.toolset.set(toolset.clone()).unwrap();
            let _tools = toolset.subscribe(|_| {});
            let ask = |id: &str| {
                registry.invoke(
                    Invocation::new("view:test.probe.guarded")
                        .input(json!({"ids": [id]}))
                        .invocation_id(id),
                    InvokeOptions::consumer(consumer("tester")),
                )
            };
            let confirmations = registry.confirmations();
            for (n, answer) in ["approve", "deny", "expire", "withdraw"].iter().enumerate() {
                let id = format!("c{n}");
                let asked = ask(&id).await;
                assert_eq!(code(&asked), Some(ErrorCode::ConfirmationRequired));
                let pending = confirmations.pending();
                let request = pending.last().unwrap();
                match *answer {
                    "approve" => {
                        confirmations.approve(&request.shown()).unwrap();
                        let retry = registry
                            .invoke(
                                Invocation::new("view:test.probe.guarded")
                                    .input(json!({"ids": [id]}))
                                    .invocation_id(&id)
                                    .confirmation(&*request.confirmation_id),
                                InvokeOptions::consumer(consumer("tester")),
                            )
                            .await;
                        assert!(retry.is_ok(), "{retry:?}");
                    }
                    "deny" => {
                        confirmations.deny(&request.shown()).unwrap();
                    }
                    "expire" => {
                        clock.now.fetch_add(3_600_000, Ordering::SeqCst);
                        confirmations.expire_due();
                    }
                    _ => {
                        let _ = confirmations
                            .withdraw_cancelled(&request.confirmation_id, &consumer("tester"));
                    }
                }
            }
            assert!(confirmations.pending().is_empty());
            drop(mounted);
            registry.forget_consumer(&consumer("tester"));
            toolset.dispose();
            registry.dispose();
            assert!(clock.calls.load(Ordering::SeqCst) > 10);
        });
        let _ = done.send(());
    });
    // A deadlock detector, not a timing claim: the work takes milliseconds.
    finished
        .recv_timeout(Duration::from_secs(60))
        .expect("a clock calling back into the registry deadlocked it");
}

#[tokio::test]
async fn as_policy_001_a_clock_stepping_back_and_forward_refills_nothing() {
    let clock = Arc::new(ManualClock::at_ms(10_000_000));
    let registry = Registry::builder()
        .environment(Environment::Test)
        .clock(clock.clone())
        .policy(rate_limit(3, Duration::from_secs(600)))
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let poke = || {
        registry.invoke(
            Invocation::new("view:test.probe.poke").input(json!({"ids": ["x"]})),
            InvokeOptions::consumer(consumer("tester")),
        )
    };
    let mut allowed = 0;
    for round in 0..10 {
        // Back an hour, three calls; forward again, three calls.
        clock.set_ms(10_000_000 - 3_600_000);
        for _ in 0..3 {
            allowed += usize::from(poke().await.is_ok());
        }
        clock.set_ms(10_000_000 + round);
        for _ in 0..3 {
            allowed += usize::from(poke().await.is_ok());
        }
    }
    assert_eq!(
        allowed, 3,
        "three of sixty calls: the bucket never refilled"
    );
    // Time observed by the registry never ran backwards either.
    clock.set_ms(1);
    assert!(registry.now_ms() >= 10_000_000);
}

// ---------------------------------------------------------------------------
// 4. Forgetting forgets in-flight work too.

#[tokio::test]
async fn as_ident_004_forget_during_an_in_flight_call_keeps_nothing_of_it() {
    let registry = registry();
    let worker = Worker::new();
    let _mounted = registry.mount(worker.clone()).unwrap();
    let session = consumer("mcp-session-1");
    let began = worker.began.notified();
    let task = {
        let registry = registry.clone();
        let session = session.clone();
        tokio::spawn(async move {
            registry
                .invoke(work("f-1"), InvokeOptions::consumer(session))
                .await
        })
    };
    began.await;
    registry.forget_consumer(&session);
    worker.gate.send_replace(true);
    assert!(task.await.unwrap().is_ok(), "the call itself settles");
    // The same identity later: no replay of the forgotten result...
    let again = registry
        .invoke(work("f-1"), InvokeOptions::consumer(session.clone()))
        .await;
    assert!(again.is_ok());
    assert_eq!(worker.started(), 2, "a new attempt, not a replay");
    // ...and no conflict with it either.
    registry.forget_consumer(&session);
    let other = registry
        .invoke(
            Invocation::new("view:test.worker.work")
                .input(json!({"ids": ["other"]}))
                .invocation_id("f-1"),
            InvokeOptions::consumer(session),
        )
        .await;
    assert!(other.is_ok(), "{other:?}");
}

/// A call of session `session` enters its invoke policies; the session ends
/// (it is forgotten), then `others` other consumers are forgotten; then the
/// call goes on. It asks nobody: nobody is left to present an approval.
async fn forgotten_mid_call(session: &str, others: usize) {
    let entered = Arc::new(Notify::new());
    let (open, gate) = watch::channel(false);
    let registry = Registry::builder()
        .environment(Environment::Test)
        .policy(Held {
            entered: Arc::clone(&entered),
            gate,
        })
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let session = consumer(session);
    let inside = entered.notified();
    let task = {
        let (registry, session) = (registry.clone(), session.clone());
        tokio::spawn(async move {
            registry
                .invoke(
                    Invocation::new("view:test.probe.guarded")
                        .input(json!({"ids": ["g"]}))
                        .invocation_id("g-1"),
                    InvokeOptions::consumer(session),
                )
                .await
        })
    };
    inside.await;
    registry.forget_consumer(&session);
    for n in 0..others {
        registry.forget_consumer(&consumer(&format!("gone-{n}")));
    }
    open.send_replace(true);
    assert_eq!(code(&task.await.unwrap()), Some(ErrorCode::Cancelled));
    assert!(
        registry.confirmations().pending().is_empty(),
        "nobody is left to present an approval"
    );
}

#[tokio::test]
async fn as_ident_004_a_call_of_a_forgotten_consumer_asks_the_person_nothing() {
    // The session ends while the call is in its invoke policies.
    forgotten_mid_call("mcp-session-2", 0).await;
}

#[tokio::test]
async fn as_ident_004_a_forgetting_let_go_of_still_asks_nobody_for_the_forgotten() {
    // …and then 20,000 other consumers are forgotten — more than the store
    // remembers by name. Who was forgotten before the forgettings let go of
    // is unknown, so such a call fails closed.
    forgotten_mid_call("mcp-session-3", 20_000).await;
}

#[tokio::test]
async fn as_conc_012_a_joiner_cancelled_while_it_waits_leaves_the_attempt_running() {
    let registry = registry();
    let worker = Worker::new();
    let _mounted = registry.mount(worker.clone()).unwrap();
    let began = worker.began.notified();
    let leader = {
        let registry = registry.clone();
        tokio::spawn(async move {
            registry
                .invoke(work("j-1"), InvokeOptions::consumer(consumer("tester")))
                .await
        })
    };
    began.await;
    let token = CancellationToken::new();
    let joiner = {
        let (registry, token) = (registry.clone(), token.clone());
        tokio::spawn(async move {
            registry
                .invoke(
                    work("j-1"),
                    InvokeOptions::consumer(consumer("tester")).cancellation(token),
                )
                .await
        })
    };
    settle_tasks().await;
    token.cancel();
    assert_eq!(code(&joiner.await.unwrap()), Some(ErrorCode::Cancelled));
    worker.gate.send_replace(true);
    assert!(
        leader.await.unwrap().is_ok(),
        "the attempt it joined runs on"
    );
    assert_eq!(worker.started(), 1);
}

// ---------------------------------------------------------------------------
// 5. Every queue is bounded, and no caller pays for others.

#[test]
fn as_evt_001_a_stuck_listener_holds_no_caller_and_the_backlog_stays_bounded() {
    const CALLS: usize = 10_000;
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let (entered, listener_entered) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let entered = Mutex::new(Some(entered));
    let seen: Arc<Mutex<Vec<SurfaceEvent>>> = Arc::default();
    let (all_seen, everything_delivered) = mpsc::channel::<()>();
    let all_seen = Mutex::new(all_seen);
    let sink = Arc::clone(&seen);
    let _listening = registry.subscribe(move |event| {
        // The first event blocks the listener until the test releases it:
        // a listener as slow as one can be.
        if let Some(entered) = entered.lock().unwrap().take() {
            let _ = entered.send(());
            let _ = released.lock().unwrap().recv();
        }
        let mut seen = sink.lock().unwrap();
        seen.push(event.clone());
        let settled = seen
            .iter()
            .filter(|e| matches!(e, SurfaceEvent::InvocationSettled { .. }))
            .count();
        let dropped: u64 = seen
            .iter()
            .map(|e| match e {
                SurfaceEvent::EventsDropped { count } => *count,
                _ => 0,
            })
            .sum();
        let delivered = seen
            .iter()
            .filter(|e| !matches!(e, SurfaceEvent::EventsDropped { .. }))
            .count();
        if settled > 0 && delivered as u64 + dropped == 2 * (CALLS as u64 + 1) {
            let _ = all_seen.lock().unwrap().send(());
        }
    });
    let read = || Invocation::new("view:test.probe.read");
    // The first call delivers its own first event and is stuck there.
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
    listener_entered
        .recv_timeout(Duration::from_secs(60))
        .unwrap();
    // Every other call completes while the listener is stuck: none of them
    // waits for anyone's delivery, and the backlog never passes its bound.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut most = 0;
    for n in 0..CALLS {
        let result = runtime
            .block_on(registry.invoke(read(), InvokeOptions::consumer(consumer(&format!("c{n}")))));
        assert!(result.is_ok());
        most = most.max(registry.event_backlog());
    }
    assert!(most <= MAX_QUEUED_EVENTS, "{most}");
    release.send(()).unwrap();
    assert!(first.join().unwrap().is_ok());
    everything_delivered
        .recv_timeout(Duration::from_secs(120))
        .expect("every event delivered or counted as dropped");
    let seen = seen.lock().unwrap();
    // Dropped events are marked where they were dropped, and what was
    // delivered keeps each invocation's order.
    assert!(
        seen.iter()
            .any(|e| matches!(e, SurfaceEvent::EventsDropped { .. }))
    );
    let mut started = std::collections::HashSet::new();
    for event in seen.iter() {
        match event {
            SurfaceEvent::InvocationStarted { invocation_id, .. } => {
                started.insert(invocation_id.clone());
            }
            SurfaceEvent::InvocationSettled { invocation_id, .. } => {
                assert!(
                    started.contains(invocation_id) || seen.len() < 2 * CALLS,
                    "settled before started"
                );
            }
            _ => {}
        }
    }
    assert_eq!(registry.event_backlog(), 0);
}

// ---------------------------------------------------------------------------
// 6. Fairness that survives many identities.

#[tokio::test]
async fn as_policy_004_ten_thousand_identities_never_lock_out_a_newcomer() {
    let clock = Arc::new(ManualClock::at_ms(0));
    let registry = Registry::builder()
        .environment(Environment::Test)
        .clock(clock.clone())
        .policy(rate_limit(3, Duration::from_secs(600)))
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let poke = |who: String| {
        registry.invoke(
            Invocation::new("view:test.probe.poke").input(json!({"ids": ["x"]})),
            InvokeOptions::consumer(consumer(&who)),
        )
    };
    // 10 000 identities, each calling once a minute for three minutes.
    for _minute in 0..3 {
        for n in 0..10_000 {
            assert!(poke(format!("regular-{n}")).await.is_ok());
        }
        clock.advance(Duration::from_secs(60));
    }
    for n in 0..10 {
        let first = poke(format!("newcomer-{n}")).await;
        assert!(first.is_ok(), "newcomer {n}: {first:?}");
    }
}

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
async fn as_confirm_005_identities_in_numbers_cannot_fill_the_pending_list_for_everyone() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let limits = Limits::default();
    // Four identities (the sessions of one client) fill the list.
    for session in 0..4 {
        for n in 0..limits.max_pending_confirmations_per_consumer {
            let asked = ask_as(&registry, &format!("session-{session}"), n).await;
            assert_eq!(code(&asked), Some(ErrorCode::ConfirmationRequired));
        }
    }
    assert_eq!(
        registry.confirmations().pending().len(),
        limits.max_pending_confirmations
    );
    // A newcomer's first request is served: the heaviest holder's oldest
    // pending request makes room (withdrawn, reason `displaced`).
    for newcomer in 0..4 {
        let asked = ask_as(&registry, &format!("newcomer-{newcomer}"), 0).await;
        assert_eq!(
            code(&asked),
            Some(ErrorCode::ConfirmationRequired),
            "newcomer {newcomer}"
        );
    }
    let pending = registry.confirmations().pending();
    assert_eq!(pending.len(), limits.max_pending_confirmations);
    assert!(
        registry
            .audit_log()
            .iter()
            .filter(|e| e.kind == AuditKind::ConfirmationWithdrawn)
            .all(|e| e.detail.as_ref().and_then(|d| d.get("reason")) == Some(&json!("displaced")))
    );
    // Rotating identities each holding one: the list is everyone's fair
    // share at once, so only then is a newcomer refused.
    let registry = crate::fixtures::registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    for n in 0..limits.max_pending_confirmations {
        let asked = ask_as(&registry, &format!("rotating-{n}"), 0).await;
        assert_eq!(code(&asked), Some(ErrorCode::ConfirmationRequired));
    }
    let refused = ask_as(&registry, "one-too-many", 0).await;
    assert_eq!(code(&refused), Some(ErrorCode::RateLimited));
}

// ---------------------------------------------------------------------------
// 7. The last event tells the truth.

/// A switch whose `when` takes its time.
pub(crate) struct Switch {
    on: AtomicBool,
}

/// A switch.
#[agent_component(type = "test.switch")]
impl Switch {
    /// Only while on.
    #[action(effect = "local-state", when = is_on)]
    fn flip(&self) {}

    fn is_on(&self) -> bool {
        let on = self.on.load(Ordering::SeqCst);
        // Widen the window between reading state and publishing it.
        for _ in 0..(usize::from(on) * 2_000) {
            std::hint::spin_loop();
        }
        on
    }
}

#[test]
fn as_evt_001_after_racing_invalidations_the_last_event_matches_the_snapshot() {
    for round in 0..40 {
        let registry = registry();
        let switch = Arc::new(Switch {
            on: AtomicBool::new(true),
        });
        let mounted = Arc::new(registry.mount(switch.clone()).unwrap());
        let last: Arc<Mutex<Option<bool>>> = Arc::default();
        let version_seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (sink, seen) = (Arc::clone(&last), Arc::clone(&version_seen));
        let _listening = registry.subscribe(move |event| match event {
            SurfaceEvent::AvailabilityChanged { available, .. } => {
                *sink.lock().unwrap() = Some(*available);
            }
            SurfaceEvent::SurfaceChanged { surface_version } => {
                let v: u64 = surface_version.parse().unwrap_or(0);
                let prev = seen.swap(v, Ordering::SeqCst);
                assert!(prev < v, "delivered out of order: {prev} then {v}");
            }
            _ => {}
        });
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (switch, mounted) = (Arc::clone(&switch), Arc::clone(&mounted));
                std::thread::spawn(move || {
                    for n in 0..200 {
                        switch.on.store((n + t) % 3 != 0, Ordering::SeqCst);
                        if n % 2 == 0 {
                            mounted.invalidate();
                        } else {
                            mounted.set_availability("flip", AvailabilityOverride::Clear);
                            mounted.invalidate();
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        // Quiescent: a last mutation, then everything before it delivered.
        mounted.bump_version();
        let final_version = registry.version();
        while version_seen.load(Ordering::SeqCst) < final_version {
            std::thread::yield_now();
        }
        let available = registry
            .snapshot(&SnapshotOptions::default())
            .components()
            .iter()
            .flat_map(|c| c.capabilities().collect::<Vec<_>>())
            .any(|c| c.id() == "view:test.switch.flip" && c.available());
        if let Some(announced) = *last.lock().unwrap() {
            assert_eq!(announced, available, "round {round}");
        }
    }
}

use agent_surface::registry::AvailabilityOverride;
use agent_surface::snapshot::SnapshotOptions;
