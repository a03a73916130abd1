//! Concurrency and races: AS-CONC-*, AS-OBS-*, AS-NAV-*, AS-OBSV-001.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::audit::AuditKind;
use agent_surface::prelude::*;
use agent_surface::registry::{Limits, Registry};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::fixtures::{Nav, Probe, call, code, consumer, registry, settle_tasks};

fn spawn_call(
    registry: &Registry,
    invocation: Invocation,
) -> tokio::task::JoinHandle<InvocationResult> {
    let registry = registry.clone();
    tokio::spawn(async move { call(&registry, invocation).await })
}

fn spawn_as(
    registry: &Registry,
    who: &str,
    invocation: Invocation,
) -> tokio::task::JoinHandle<InvocationResult> {
    let registry = registry.clone();
    let who = consumer(who);
    tokio::spawn(async move {
        registry
            .invoke(invocation, InvokeOptions::consumer(who))
            .await
    })
}

#[tokio::test(start_paused = true)]
async fn as_conc_002_actions_serialize_fifo_per_instance_with_a_bounded_queue() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let running = spawn_call(&registry, Invocation::new("view:test.probe.hold"));
    settle_tasks().await;
    let queued: Vec<_> = ["a", "b"]
        .iter()
        .map(|id| {
            spawn_call(
                &registry,
                Invocation::new("view:test.probe.poke").input(json!({"ids": [id]})),
            )
        })
        .collect();
    settle_tasks().await;
    let overflow = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": ["c"]})),
    )
    .await;
    let error = overflow.error().unwrap();
    assert_eq!(error.code(), ErrorCode::RateLimited);
    assert_eq!(error.detail("reason"), Some(&json!("queue-full")));
    assert!(error.detail("retryAfterMs").is_some());
    assert_eq!(probe.runs(), 0, "queued actions wait for the running one");
    // Observations never take the action queue.
    assert!(
        call(&registry, Invocation::new("view:test.probe.read"))
            .await
            .is_ok()
    );
    probe.open();
    assert!(running.await.unwrap().is_ok());
    for handle in queued {
        assert!(handle.await.unwrap().is_ok());
    }
    assert_eq!(*probe.seen.lock().unwrap(), ["a", "b"], "FIFO");
}

#[tokio::test(start_paused = true)]
async fn as_conc_001_concurrency_groups_have_their_own_queues() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    // The instance queue is busy...
    let held = spawn_call(&registry, Invocation::new("view:test.probe.hold"));
    settle_tasks().await;
    // ...but `solo` (concurrency = "capability") and `wide` (parallel(2),
    // queue depth 1) have queues of their own.
    let solo = spawn_call(&registry, Invocation::new("view:test.probe.solo"));
    let wide: Vec<_> = (0..3)
        .map(|_| spawn_call(&registry, Invocation::new("view:test.probe.wide")))
        .collect();
    settle_tasks().await;
    let overflow = call(&registry, Invocation::new("view:test.probe.wide")).await;
    assert_eq!(
        code(&overflow),
        Some(ErrorCode::RateLimited),
        "2 running + 1 waiting, the 4th is refused"
    );
    probe.open();
    assert!(held.await.unwrap().is_ok());
    assert!(solo.await.unwrap().is_ok());
    for handle in wide {
        assert!(handle.await.unwrap().is_ok());
    }
    assert_eq!(probe.runs(), 5);
}

/// A component whose actions share named concurrency keys.
struct Keyed {
    gate: tokio::sync::watch::Sender<bool>,
    log: Mutex<Vec<&'static str>>,
}

impl Keyed {
    fn new() -> Arc<Keyed> {
        Arc::new(Keyed {
            gate: tokio::sync::watch::channel(false).0,
            log: Mutex::new(Vec::new()),
        })
    }

    async fn run(&self, name: &'static str, done: &'static str) {
        self.log.lock().unwrap().push(name);
        let _ = self.gate.subscribe().wait_for(|open| *open).await;
        self.log.lock().unwrap().push(done);
    }

    fn log(&self) -> Vec<&'static str> {
        self.log.lock().unwrap().clone()
    }
}

/// Synchronisation with a remote address book.
#[agent_component(type = "test.keyed")]
impl Keyed {
    /// Pull contacts; shares the `sync` key with `push`.
    #[action(effect = "local-state", concurrency = "key:sync", queue_depth = 1)]
    async fn pull(&self) {
        self.run("pull", "pull done").await;
    }

    /// Push contacts; shares the `sync` key with `pull`.
    #[action(effect = "local-state", concurrency = "key:sync", queue_depth = 1)]
    async fn push(&self) {
        self.run("push", "push done").await;
    }

    /// Export contacts, under a key of its own.
    #[action(effect = "local-state", concurrency = "key:export")]
    async fn export(&self) {
        self.run("export", "export done").await;
    }

    /// Rename the book, on the instance queue.
    #[action(effect = "local-state")]
    async fn rename(&self) {
        self.run("rename", "rename done").await;
    }
}

#[tokio::test(start_paused = true)]
async fn as_conc_001_capabilities_sharing_a_key_serialize_and_other_keys_run_concurrently() {
    let registry = registry();
    let keyed = Keyed::new();
    let _mounted = registry.mount(Arc::clone(&keyed)).unwrap();
    let pull = spawn_call(&registry, Invocation::new("view:test.keyed.pull"));
    settle_tasks().await;
    // `push` shares the `sync` key: it waits behind `pull`.
    let push = spawn_call(&registry, Invocation::new("view:test.keyed.push"));
    settle_tasks().await;
    // `export` (another key) and `rename` (the instance queue) start at once.
    let export = spawn_call(&registry, Invocation::new("view:test.keyed.export"));
    let rename = spawn_call(&registry, Invocation::new("view:test.keyed.rename"));
    settle_tasks().await;
    assert_eq!(keyed.log(), ["pull", "export", "rename"]);
    // The key's queue (depth 1) is shared: a third call of either is refused.
    for id in ["view:test.keyed.pull", "view:test.keyed.push"] {
        let overflow = call(&registry, Invocation::new(id)).await;
        assert_eq!(code(&overflow), Some(ErrorCode::RateLimited), "{id}");
        assert_eq!(
            overflow.error().unwrap().detail("reason"),
            Some(&json!("queue-full"))
        );
    }
    keyed.gate.send_replace(true);
    for handle in [pull, push, export, rename] {
        assert!(handle.await.unwrap().is_ok());
    }
    let log = keyed.log();
    let at = |entry: &str| log.iter().position(|e| *e == entry).unwrap();
    assert!(
        at("pull done") < at("push"),
        "push ran only after pull settled: {log:?}"
    );
    assert_eq!(log.len(), 8, "{log:?}");
}

#[tokio::test(start_paused = true)]
async fn as_conc_010_unmount_before_execute_fails_and_the_handler_never_runs() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let running = spawn_call(&registry, Invocation::new("view:test.probe.hold"));
    settle_tasks().await;
    let queued = spawn_call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": ["a"]})),
    );
    settle_tasks().await;
    drop(mounted);
    let queued = queued.await.unwrap();
    assert_eq!(code(&queued), Some(ErrorCode::ComponentUnmounted));
    assert_eq!(
        code(&running.await.unwrap()),
        Some(ErrorCode::ComponentUnmounted)
    );
    assert!(
        probe.seen.lock().unwrap().is_empty(),
        "the queued handler never ran"
    );
    // Unmounted before dispatch: resolution fails.
    let late = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": ["a"]})),
    )
    .await;
    assert_eq!(code(&late), Some(ErrorCode::ComponentUnmounted));
}

#[tokio::test(start_paused = true)]
async fn as_conc_010_unmount_during_execute_handler_wins_when_it_settled_first() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let running = spawn_call(&registry, Invocation::new("view:test.probe.hold"));
    settle_tasks().await;
    // The handler completes, then the component unmounts before the
    // pipeline task observes either: the handler settled first and wins.
    probe.open();
    drop(mounted);
    let result = running.await.unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(probe.runs(), 1);
}

#[tokio::test(start_paused = true)]
async fn as_conc_010_unmount_during_execute_unmount_wins_when_the_handler_is_still_running() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let running = spawn_call(&registry, Invocation::new("view:test.probe.hold"));
    settle_tasks().await;
    drop(mounted);
    let result = running.await.unwrap();
    assert_eq!(code(&result), Some(ErrorCode::ComponentUnmounted));
    assert_eq!(
        result.error().unwrap().detail("phase"),
        Some(&json!("mid-flight"))
    );
    probe.open();
    settle_tasks().await;
    assert!(
        registry
            .audit_log()
            .iter()
            .any(|e| e.kind == AuditKind::LateSettlement),
        "the loser is recorded as a late settlement"
    );
}

#[tokio::test(start_paused = true)]
async fn as_conc_012_external_cancel_before_queue_entry_and_while_queued() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let options = InvokeOptions::consumer(consumer("tester")).cancellation(cancelled);
    let before = registry
        .invoke(
            Invocation::new("view:test.probe.poke").input(json!({"ids": ["early"]})),
            options,
        )
        .await;
    assert_eq!(code(&before), Some(ErrorCode::Cancelled));

    let running = spawn_call(&registry, Invocation::new("view:test.probe.hold"));
    settle_tasks().await;
    let token = CancellationToken::new();
    let queued = tokio::spawn({
        let registry = registry.clone();
        let options = InvokeOptions::consumer(consumer("tester")).cancellation(token.clone());
        async move {
            registry
                .invoke(
                    Invocation::new("view:test.probe.poke").input(json!({"ids": ["queued"]})),
                    options,
                )
                .await
        }
    });
    settle_tasks().await;
    token.cancel();
    assert_eq!(code(&queued.await.unwrap()), Some(ErrorCode::Cancelled));
    probe.open();
    assert!(running.await.unwrap().is_ok());
    assert!(
        probe.seen.lock().unwrap().is_empty(),
        "neither cancelled call executed"
    );
}

#[tokio::test(start_paused = true)]
async fn as_obs_001_observation_admission_has_per_consumer_and_global_limits() {
    let registry = Registry::builder()
        .limits(
            Limits::default()
                .max_concurrent_observations_per_consumer(2)
                .max_concurrent_observations_total(3)
                .max_queued_observations_per_consumer(1),
        )
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let held = || Invocation::new("view:test.probe.readHeld");
    let a: Vec<_> = (0..3).map(|_| spawn_as(&registry, "a", held())).collect(); // 2 run, 1 queued
    settle_tasks().await;
    let refused = registry
        .invoke(held(), InvokeOptions::consumer(consumer("a")))
        .await;
    let error = refused.error().unwrap();
    assert_eq!(error.code(), ErrorCode::RateLimited);
    assert_eq!(error.detail("reason"), Some(&json!("queue-full")));
    assert!(error.detail("retryAfterMs").is_some());
    // The global gate is independent: b gets the third slot, then waits.
    let b: Vec<_> = (0..2).map(|_| spawn_as(&registry, "b", held())).collect();
    settle_tasks().await;
    probe.open();
    for handle in a.into_iter().chain(b) {
        assert!(handle.await.unwrap().is_ok());
    }
}

#[tokio::test(start_paused = true)]
async fn as_obs_002_a_saturated_consumer_cannot_starve_another() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let held = || Invocation::new("view:test.probe.readHeld");
    // Consumer a saturates its allowance (8 running, 8 queued).
    let a: Vec<_> = (0..16).map(|_| spawn_as(&registry, "a", held())).collect();
    settle_tasks().await;
    assert_eq!(
        code(
            &registry
                .invoke(held(), InvokeOptions::consumer(consumer("a")))
                .await
        ),
        Some(ErrorCode::RateLimited)
    );
    // Consumer b is admitted at once.
    let b = registry
        .invoke(
            Invocation::new("view:test.probe.read"),
            InvokeOptions::consumer(consumer("b")),
        )
        .await;
    assert!(b.is_ok(), "{b:?}");
    probe.open();
    for handle in a {
        assert!(handle.await.unwrap().is_ok());
    }
}

#[tokio::test(start_paused = true)]
async fn as_obs_003_slots_are_released_and_queues_drain_fifo_and_dispose_cancels_waiters() {
    let registry = Registry::builder()
        .limits(
            Limits::default()
                .max_concurrent_observations_per_consumer(1)
                .observation_timeout(Duration::from_millis(50)),
        )
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    // A timeout releases the slot.
    let timed_out = registry
        .invoke(
            Invocation::new("view:test.probe.readHeld"),
            InvokeOptions::consumer(consumer("a")),
        )
        .await;
    assert_eq!(code(&timed_out), Some(ErrorCode::Timeout));
    assert!(
        registry
            .invoke(
                Invocation::new("view:test.probe.read"),
                InvokeOptions::consumer(consumer("a"))
            )
            .await
            .is_ok()
    );
    // A cancelled waiter releases its place; the queue drains in order.
    let registry = Registry::builder()
        .limits(
            Limits::default()
                .max_concurrent_observations_per_consumer(1)
                .max_queued_observations_per_consumer(2),
        )
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let first = spawn_as(&registry, "a", Invocation::new("view:test.probe.readHeld"));
    settle_tasks().await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let queued: Vec<_> = (0..2)
        .map(|n| {
            let (registry, order) = (registry.clone(), Arc::clone(&order));
            tokio::spawn(async move {
                let result = registry
                    .invoke(
                        Invocation::new("view:test.probe.read"),
                        InvokeOptions::consumer(consumer("a")),
                    )
                    .await;
                order.lock().unwrap().push(n);
                result
            })
        })
        .collect();
    settle_tasks().await;
    probe.open();
    assert!(first.await.unwrap().is_ok());
    for handle in queued {
        assert!(handle.await.unwrap().is_ok());
    }
    assert_eq!(*order.lock().unwrap(), [0, 1]);
    // Disposal drains queues as CANCELLED.
    let registry = Registry::builder()
        .limits(Limits::default().max_concurrent_observations_per_consumer(1))
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let running = spawn_as(&registry, "a", Invocation::new("view:test.probe.readHeld"));
    settle_tasks().await;
    let waiting = spawn_as(&registry, "a", Invocation::new("view:test.probe.read"));
    settle_tasks().await;
    registry.dispose();
    assert_eq!(code(&waiting.await.unwrap()), Some(ErrorCode::Cancelled));
    assert_eq!(code(&running.await.unwrap()), Some(ErrorCode::Cancelled));
}

fn mount_nav(registry: &Registry) -> (Arc<Nav>, Arc<Mutex<Option<Mounted>>>) {
    let nav = Nav::new();
    let handle = Arc::new(Mutex::new(Some(registry.mount(nav.clone()).unwrap())));
    (nav, handle)
}

#[tokio::test(start_paused = true)]
async fn as_nav_001_navigation_commit_then_owner_unmount_settles_ok() {
    let registry = registry();
    let (nav, handle) = mount_nav(&registry);
    // Committing the route unmounts the component that owns the action.
    *nav.on_commit.lock().unwrap() = Some(Box::new({
        let handle = Arc::clone(&handle);
        move || drop(handle.lock().unwrap().take())
    }));
    let going = spawn_call(&registry, Invocation::new("view:test.nav.go"));
    settle_tasks().await;
    nav.decide(true);
    let result = going.await.unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert!(handle.lock().unwrap().is_none(), "the owner is gone");
}

#[tokio::test(start_paused = true)]
async fn as_nav_001_navigation_is_not_settled_by_unmount_while_pending() {
    let registry = registry();
    let (nav, handle) = mount_nav(&registry);
    let going = spawn_call(&registry, Invocation::new("view:test.nav.go"));
    settle_tasks().await;
    drop(handle.lock().unwrap().take()); // unmount while the router is deciding
    settle_tasks().await;
    assert!(
        !going.is_finished(),
        "unmount timing does not decide a navigation"
    );
    nav.decide(true);
    assert!(going.await.unwrap().is_ok());
}

#[tokio::test(start_paused = true)]
async fn as_nav_002_rejected_navigation_settles_a_typed_failure() {
    let registry = registry();
    let (nav, _handle) = mount_nav(&registry);
    let going = spawn_call(&registry, Invocation::new("view:test.nav.go"));
    settle_tasks().await;
    nav.decide(false);
    let refused = going.await.unwrap();
    assert_eq!(code(&refused), Some(ErrorCode::ExecutionFailed));
    // Aborted (external cancellation) before the router decided: CANCELLED.
    let token = CancellationToken::new();
    let going = tokio::spawn({
        let registry = registry.clone();
        let options = InvokeOptions::consumer(consumer("tester")).cancellation(token.clone());
        nav.gate.send_replace(None);
        async move {
            registry
                .invoke(Invocation::new("view:test.nav.go"), options)
                .await
        }
    });
    settle_tasks().await;
    token.cancel();
    assert_eq!(code(&going.await.unwrap()), Some(ErrorCode::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn as_nav_003_owner_unmounted_before_dispatch_fails_component_unmounted() {
    let registry = registry();
    let (_nav, handle) = mount_nav(&registry);
    let id = handle
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .registration_id()
        .to_owned();
    drop(handle.lock().unwrap().take());
    let result = call(
        &registry,
        Invocation::new("view:test.nav.go").registration(id),
    )
    .await;
    assert_eq!(code(&result), Some(ErrorCode::ComponentUnmounted));
}

#[tokio::test(start_paused = true)]
async fn as_nav_004_a_timeout_cannot_overwrite_a_resolved_navigation() {
    let registry = registry();
    let (nav, _handle) = mount_nav(&registry);
    nav.decide(true);
    let request = Invocation::new("view:test.nav.go").invocation_id("nav-1");
    let result = call(&registry, request.clone()).await;
    assert!(result.is_ok());
    tokio::time::advance(Duration::from_secs(10)).await; // well past the 2 s timeout
    settle_tasks().await;
    assert_eq!(
        call(&registry, request).await,
        result,
        "still ok after the timeout elapsed"
    );
}

#[tokio::test(start_paused = true)]
async fn as_obsv_001_audit_reports_queue_wait_apart_from_execution() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let running = spawn_call(&registry, Invocation::new("view:test.probe.hold"));
    settle_tasks().await;
    let queued = spawn_call(
        &registry,
        Invocation::new("view:test.probe.nap")
            .input(json!({"ms": 40}))
            .invocation_id("queued"),
    );
    settle_tasks().await;
    tokio::time::advance(Duration::from_millis(300)).await;
    probe.open();
    assert!(running.await.unwrap().is_ok());
    assert!(queued.await.unwrap().is_ok());
    let settled = registry
        .audit_log()
        .into_iter()
        .find(|e| {
            e.kind == AuditKind::InvocationSettled && e.invocation_id.as_deref() == Some("queued")
        })
        .unwrap();
    assert!(settled.queue_wait_ms.unwrap() >= 300, "{settled:?}");
    assert_eq!(settled.execution_ms, Some(40));
    assert_eq!(
        settled.duration_ms,
        Some(settled.queue_wait_ms.unwrap() + 40)
    );
}
