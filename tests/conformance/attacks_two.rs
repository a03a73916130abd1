//! Second hostile round: attacks on the fixes of the first (wait guards,
//! the forget epoch, the dispatcher's own-events rule, exact debtors,
//! settlement-time dedupe records, policy phases ending on unmount).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use agent_surface::audit::{AuditEvent, AuditKind, AuditSink};
use agent_surface::confirmation::ConfirmationOutcome;
use agent_surface::events::{Subscription, SurfaceEvent};
use agent_surface::prelude::*;
use agent_surface::toolset::ExecuteOptions;
use serde_json::json;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{
    Held, Nav, Probe, code, consumer, embedded_toolset, guarded_name, registry, settle_tasks,
    settled_codes, spawn_wait,
};

// ---------------------------------------------------------------------------
// H1. WaitGuard: a wait that ended another way (the MCP client answered)
// ends with `finish()`, which withdraws nothing (dropping the guard is
// abandoning the wait).
#[tokio::test(start_paused = true)]
async fn as_topo_003_a_wait_ended_by_another_answer_never_withdraws_the_request() {
    let registry = registry();
    let _m = registry.mount(Probe::new()).unwrap();
    let agent = consumer("agent");
    let first = registry
        .invoke(
            Invocation::new("view:test.probe.guarded")
                .input(json!({"ids": ["e"]}))
                .invocation_id("el-1"),
            InvokeOptions::consumer(agent.clone()),
        )
        .await;
    let id = crate::fixtures::confirmation_id(&first);
    let confirmations = registry.confirmations();
    let abandoned = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&abandoned);
    let mut waiting = confirmations.wait_guard(&id, &agent, move |_| {
        flag.store(true, Ordering::SeqCst);
    });
    // The client's person answered (the elicitation returned first).
    let answered = async {};
    let ended_elsewhere = tokio::select! {
        biased;
        () = answered => false,
        _ = waiting.outcome() => true,
    };
    assert!(!ended_elsewhere);
    waiting.finish(); // what mcp/call.rs does before `answer_elicitation`
    let still = confirmations.find(&id);
    assert!(
        still.is_some() && !abandoned.load(Ordering::SeqCst),
        "ending the wait because the client answered withdrew the request \
         (resolution {:?}) and ran the abandonment hook: {}; the client's \
         approval can no longer be applied",
        confirmations.resolution(&id).map(|r| (r.outcome, r.reason)),
        abandoned.load(Ordering::SeqCst)
    );
}

// ---------------------------------------------------------------------------
// H2. A host dialog following the request with `Confirmations::wait_for`
// counts as "another call waiting": a cancelled wait-mode call leaves the
// person asked for something no call waits for, and settles outside the
// pipeline (never audited or kept as CANCELLED).
#[tokio::test(start_paused = true)]
async fn as_topo_003_a_host_dialog_watching_the_request_is_not_a_waiting_call() {
    let registry = registry();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let toolset = embedded_toolset(&registry);
    let token = CancellationToken::new();
    let call = spawn_wait(&toolset, "dialog-1", Some(token.clone()));
    settle_tasks().await;
    let pending = registry.confirmations().pending();
    assert_eq!(pending.len(), 1);
    // The host's dialog closes itself when the request ends.
    let dialog = {
        let confirmations = registry.confirmations();
        let id = pending[0].confirmation_id.to_string();
        tokio::spawn(async move { confirmations.wait_for(&id).await })
    };
    settle_tasks().await;
    token.cancel();
    assert_eq!(code(&call.await.unwrap()), Some(ErrorCode::Cancelled));
    settle_tasks().await;
    let left = registry.confirmations().pending().len();
    let codes = settled_codes(&registry, "dialog-1");
    // The person approves what the dialog still shows: nothing runs.
    if let Some(request) = registry.confirmations().pending().first() {
        registry.confirmations().approve(&request.shown()).unwrap();
    }
    let outcome = tokio::time::timeout(Duration::from_secs(60), dialog).await;
    assert!(
        left == 0 && codes.last().copied().flatten() == Some(ErrorCode::Cancelled),
        "cancelled call, but {left} request(s) still shown to the person \
         (dialog then saw {outcome:?}, handler runs {}); settled codes {codes:?}",
        probe.runs()
    );
}

// ---------------------------------------------------------------------------
// H3. An aborted wait-mode call is "kept for its id" — but under the
// fingerprint of the *retry* (with the confirmation id), so retrying the
// same tool call is told INVOCATION_CONFLICT, not its CANCELLED.
#[tokio::test(start_paused = true)]
async fn as_ident_001_retrying_an_aborted_wait_mode_call_gets_its_result_not_a_conflict() {
    let registry = registry();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let toolset = embedded_toolset(&registry);
    let call = spawn_wait(&toolset, "again-1", None);
    settle_tasks().await;
    assert_eq!(registry.confirmations().pending().len(), 1);
    call.abort();
    let _ = call.await;
    settle_tasks().await;
    let retry = spawn_wait(&toolset, "again-1", None);
    settle_tasks().await;
    let asked = registry.confirmations().pending().len();
    if let Some(request) = registry.confirmations().pending().first() {
        registry.confirmations().approve(&request.shown()).unwrap();
    }
    let retry = retry.await.unwrap();
    assert_eq!(
        code(&retry),
        Some(ErrorCode::Cancelled),
        "the same tool call again (asked the person anew: {asked}) got {:?}",
        retry.error()
    );
}

// H3b. The race: the same tool-call id again *before* the spawned
// settlement ran. The fresh call asks the person; the settlement then
// files CANCELLED under the old confirmation's fingerprint; the person
// approves the fresh request and the call is told INVOCATION_CONFLICT —
// the approval is wasted and stays open.
#[tokio::test(start_paused = true)]
async fn as_ident_001_a_fresh_call_after_an_abandoned_wait_never_wastes_an_approval() {
    let registry = registry();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let toolset = embedded_toolset(&registry);
    let call = spawn_wait(&toolset, "race-1", None);
    settle_tasks().await;
    assert_eq!(registry.confirmations().pending().len(), 1);
    call.abort();
    // Queued behind the aborted task, ahead of the settlement it spawns.
    let fresh = spawn_wait(&toolset, "race-1", None);
    settle_tasks().await;
    let asked: Vec<_> = registry.confirmations().pending();
    for request in &asked {
        registry.confirmations().approve(&request.shown()).unwrap();
    }
    let fresh = tokio::time::timeout(Duration::from_secs(60), fresh)
        .await
        .unwrap()
        .unwrap();
    let wasted = asked
        .iter()
        .filter(|r| {
            registry
                .confirmations()
                .resolution(&r.confirmation_id)
                .is_some_and(|res| res.outcome == ConfirmationOutcome::Approved)
        })
        .count();
    assert!(
        fresh.is_ok() || (asked.is_empty() && code(&fresh) == Some(ErrorCode::Cancelled)),
        "person asked {} time(s) and approved; the call got {:?}; \
         approved-but-unused records left open: {wasted}; handler runs {}",
        asked.len(),
        fresh.error(),
        probe.runs()
    );
}

// ---------------------------------------------------------------------------
// H4. Dropping a waiting call outside a tokio runtime (another executor,
// or a runtime shutting down): the request is withdrawn, but nothing
// settles the call — no CANCELLED audited or kept for its id.
#[test]
fn as_topo_003_an_abandoned_wait_outside_a_runtime_still_settles_cancelled() {
    use std::future::Future;
    let registry = registry();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let toolset = embedded_toolset(&registry);
    let name = guarded_name(&toolset);
    let mut future = Box::pin(toolset.execute_with_options(
        &name,
        json!({"ids": ["x"]}),
        ExecuteOptions::new().tool_call_id(Some("outside-1")),
    ));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..10 {
        assert!(future.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(registry.confirmations().pending().len(), 1, "waiting");
    drop(future);
    let codes = settled_codes(&registry, "outside-1");
    assert!(
        registry.confirmations().pending().is_empty()
            && codes.last().copied().flatten() == Some(ErrorCode::Cancelled),
        "abandoned outside a runtime: pending {}, settled codes {codes:?}",
        registry.confirmations().pending().len()
    );
}

// ---------------------------------------------------------------------------
// H5. The forget memory overflows: a call of a consumer nobody forgot is
// refused CANCELLED because 4,097 *other* consumers (ended sessions) were
// forgotten while it ran.
#[tokio::test]
async fn as_ident_004_other_consumers_forgotten_in_numbers_never_cancel_a_live_call() {
    let entered = Arc::new(Notify::new());
    let (open, gate) = watch::channel(false);
    let registry = Registry::builder()
        .environment(Environment::Test)
        .policy(Held {
            entered: Arc::clone(&entered),
            gate,
        })
        .build();
    let probe = Probe::new();
    let _m = registry.mount(probe.clone()).unwrap();
    let inside = entered.notified();
    let task = {
        let registry = registry.clone();
        tokio::spawn(async move {
            registry
                .invoke(
                    Invocation::new("view:test.probe.guarded")
                        .input(json!({"ids": ["live"]}))
                        .invocation_id("live-1"),
                    InvokeOptions::consumer(consumer("still-here")),
                )
                .await
        })
    };
    inside.await;
    // Sessions of other clients end meanwhile.
    for n in 0..4_097 {
        registry.forget_consumer(&consumer(&format!("ended-session-{n}")));
    }
    open.send_replace(true);
    let result = task.await.unwrap();
    assert_eq!(
        code(&result),
        Some(ErrorCode::ConfirmationRequired),
        "a consumer nobody forgot was refused: {:?}",
        result.error()
    );
}

// ---------------------------------------------------------------------------
// H6. A listener whose closure panics when dropped, unsubscribed during its
// own delivery: the last reference is dropped in `deliver`, outside any
// containment. The panic escapes `mount`, and `dispatching` stays set for
// good: no listener ever receives another event.
struct DropBomb;
impl Drop for DropBomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            #[allow(clippy::panic)]
            {
                panic!("listener destructor");
            }
        }
    }
}

#[test]
fn as_evt_001_a_listener_destructor_that_panics_never_stops_delivery() {
    let registry = registry();
    let slot: Arc<Mutex<Option<Subscription>>> = Arc::default();
    let bomb = DropBomb;
    let own = Arc::clone(&slot);
    let subscription = registry.subscribe(move |_| {
        let _held = &bomb;
        // Unsubscribes itself (a one-shot listener).
        drop(own.lock().unwrap().take());
    });
    *slot.lock().unwrap() = Some(subscription);
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let (arrived_tx, arrived) = mpsc::channel::<()>();
    let arrived_tx = Mutex::new(arrived_tx);
    let _other = registry.subscribe(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        let _ = arrived_tx.lock().unwrap().send(());
    });
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        registry.mount(Probe::new()).map(std::mem::forget)
    }));
    let before = seen.load(Ordering::SeqCst);
    while arrived.try_recv().is_ok() {}
    let _nav = registry.mount(Nav::new()).unwrap();
    // Delivered on this thread or the delivery thread; the timeout only
    // guards against it never arriving.
    let _ = arrived.recv_timeout(Duration::from_secs(60));
    let after = seen.load(Ordering::SeqCst);
    assert!(
        first.is_ok() && after > before,
        "mount panicked: {}; events delivered after it: {} (backlog {})",
        first.is_err(),
        after - before,
        registry.event_backlog()
    );
}

// ---------------------------------------------------------------------------
// H7. The own-events count is one thread-local slot for one dispatcher:
// another registry's drain in between (here from the first registry's
// audit sink, host code run between a mount's enqueue and its drain)
// wipes it, so a single-threaded mount's own events are handed to the
// delivery thread — after `mount` returns, its listener has not seen
// ComponentRegistered.
struct MirrorSink {
    other: Mutex<Option<Registry>>,
}
impl AuditSink for MirrorSink {
    fn record(&self, event: &AuditEvent) {
        if event.kind == AuditKind::Registration {
            let other = self.other.lock().unwrap().clone();
            if let Some(other) = other {
                // E.g. the host mirrors registrations into a second registry.
                let _ = other.mount(Nav::new()).map(std::mem::forget);
            }
        }
    }
}

#[test]
fn as_evt_001_a_single_threaded_mount_delivers_its_own_events_before_it_returns() {
    let other = registry();
    let _o = other.subscribe(|_| {});
    let sink = Arc::new(MirrorSink {
        other: Mutex::new(None),
    });
    let registry = Registry::builder()
        .environment(Environment::Test)
        .audit_sink(sink.clone())
        .build();
    *sink.other.lock().unwrap() = Some(other);
    let (tx, rx) = mpsc::channel::<Option<String>>();
    let tx = Mutex::new(tx);
    let seen = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&seen);
    let _l = registry.subscribe(move |event| {
        if matches!(event, SurfaceEvent::ComponentRegistered { .. }) {
            flag.store(true, Ordering::SeqCst);
            let _ = tx
                .lock()
                .unwrap()
                .send(std::thread::current().name().map(str::to_owned));
        }
    });
    let _m = registry.mount(Probe::new()).unwrap();
    let synchronous = seen.load(Ordering::SeqCst);
    let on = rx.recv_timeout(Duration::from_secs(30)).ok().flatten();
    assert!(
        synchronous,
        "mount returned before its listener saw ComponentRegistered (delivered later on {on:?})"
    );
}

// ---------------------------------------------------------------------------
// H8. A drain delivers another thread's events on its own thread: after its
// own events it takes `nested` more off the front of the queue — which may
// be another call's, queued meanwhile, not what its listeners caused.
#[test]
fn as_evt_001_a_mounter_never_delivers_another_calls_events() {
    let registry = registry();
    let _probe = registry.mount(Probe::new()).unwrap();
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (go_tx, go) = mpsc::channel::<()>();
    let (entered_tx, go) = (Mutex::new(entered_tx), Mutex::new(go));
    let armed = Arc::new(AtomicBool::new(true));
    let delivered: Arc<Mutex<Vec<Delivery>>> = Arc::default();
    let (logged_tx, logged) = mpsc::channel::<()>();
    let logged_tx = Mutex::new(logged_tx);
    let inner = registry.clone();
    let (a, log) = (Arc::clone(&armed), Arc::clone(&delivered));
    let _l = registry.subscribe(move |event| {
        if let SurfaceEvent::InvocationStarted { consumer_id, .. }
        | SurfaceEvent::InvocationSettled { consumer_id, .. } = event
        {
            log.lock().unwrap().push((
                consumer_id.to_string(),
                std::thread::current().name().map(str::to_owned),
            ));
            let _ = logged_tx.lock().unwrap().send(());
        }
        if matches!(event, SurfaceEvent::ComponentRegistered { .. })
            && a.swap(false, Ordering::SeqCst)
        {
            let _ = entered_tx.lock().unwrap().send(());
            let _ = go.lock().unwrap().recv_timeout(Duration::from_secs(60));
            // The listener's own work: a nested mount (its events are this
            // drain's to deliver).
            let _ = inner.mount(Nav::new()).map(std::mem::forget);
        }
    });
    let mounter = {
        let registry = registry.clone();
        std::thread::Builder::new()
            .name("mounter".into())
            .spawn(move || {
                let _ = registry.mount(Slow2::new()).map(std::mem::forget);
            })
            .unwrap()
    };
    entered.recv_timeout(Duration::from_secs(60)).unwrap();
    // Another call, on another thread, while the mounter delivers.
    let other = {
        let registry = registry.clone();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(registry.invoke(
                    Invocation::new("view:test.probe.read"),
                    InvokeOptions::consumer(consumer("bystander")),
                ))
        })
    };
    assert!(other.join().unwrap().is_ok());
    go_tx.send(()).unwrap();
    mounter.join().unwrap();
    // Both of the bystander's events arrive; the timeout only guards.
    for _ in 0..2 {
        let _ = logged.recv_timeout(Duration::from_secs(60));
    }
    let log = delivered.lock().unwrap().clone();
    assert!(
        log.len() == 2
            && log
                .iter()
                .all(|(who, on)| who.ends_with("bystander") && on.as_deref() != Some("mounter")),
        "the bystander's events were delivered by: {log:?}"
    );
}

/// Whose event, delivered on which thread.
type Delivery = (String, Option<String>);

/// A second component type for the mounter.
pub(crate) struct Slow2;
impl Slow2 {
    fn new() -> Arc<Slow2> {
        Arc::new(Slow2)
    }
}
/// Nothing to see.
#[agent_component(type = "hostile2.quiet")]
impl Slow2 {
    /// Reads nothing.
    #[observation]
    fn nothing(&self) -> u32 {
        0
    }
}

/// Attaching a watcher never wakes the watchers already attached: any
/// caller can attach them (an MCP client opening `subscriptions/listen`
/// streams), and each wake-up makes every watcher re-check its view, so a
/// new one costing all the others would make each attach cost the sum.
#[tokio::test]
async fn a_new_version_watcher_does_not_wake_the_others() {
    let registry = agent_surface::Registry::builder().build();
    let mut first = registry.watch_version();
    first.mark_unchanged();
    for _ in 0..100 {
        let _another = registry.watch_version();
    }
    assert!(!first.has_changed().unwrap());
    assert_eq!(*first.borrow(), registry.version());
}
