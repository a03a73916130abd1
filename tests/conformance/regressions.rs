//! Regressions of the lazily built registry, the LRU memories, the
//! unordered instance index and the table it keeps for the next type, the audit sinks, availability overrides and
//! capability ids parsed at the pipeline's entry, each through the public
//! API only.

use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use agent_surface::audit::{AuditEvent, AuditKind, AuditSink, MemoryAuditSink};
use agent_surface::events::SurfaceEvent;
use agent_surface::prelude::*;
use agent_surface::registry::{AvailabilityOverride, Limits, MountError, Registry};
use serde_json::json;

use crate::fixtures::{Probe, call, code, consumer, registry};

fn poke() -> Invocation {
    Invocation::new("view:test.probe.poke").input(json!({"ids": ["a"]}))
}

#[tokio::test]
async fn a_registry_disposed_before_any_use_refuses_everything() {
    let registry = registry();
    registry.dispose();
    assert!(registry.is_disposed());
    assert!(matches!(
        registry.mount(Probe::new()),
        Err(MountError::Disposed)
    ));
    let result = call(&registry, poke()).await;
    assert_eq!(code(&result), Some(ErrorCode::Cancelled));
    let heard = Arc::new(Mutex::new(0));
    let counter = Arc::clone(&heard);
    let _subscription = registry.subscribe(move |_| *counter.lock().unwrap() += 1);
    assert!(registry.mount(Probe::new()).is_err());
    assert_eq!(*heard.lock().unwrap(), 0);
    assert_eq!(registry.version(), 0);
    registry.dispose();
    assert!(registry.surface_id().starts_with("srf_"));
    assert_eq!(registry.surface_id().len(), 26);
}

#[test]
fn the_surface_id_is_minted_once_whoever_reads_it_first() {
    let registry = registry();
    let barrier = Arc::new(Barrier::new(16));
    let ids: Vec<String> = (0..16)
        .map(|_| {
            let registry = registry.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                registry.surface_id().to_owned()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|handle| handle.join().unwrap())
        .collect();
    assert!(ids.iter().all(|id| id == &ids[0]));
    assert_eq!(registry.clone().surface_id(), ids[0]);
    assert_ne!(self::registry().surface_id(), ids[0]);
}

#[tokio::test]
async fn concurrent_first_mounts_mint_distinct_ids_that_validate_only_here() {
    let here = registry();
    let barrier = Arc::new(Barrier::new(8));
    let mounts: Vec<_> = (0..8)
        .map(|i| {
            let registry = here.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                registry
                    .mount_instance(Probe::new(), &format!("p{i}"))
                    .unwrap()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|handle| handle.join().unwrap())
        .collect();
    let ids: std::collections::HashSet<&str> = mounts.iter().map(|m| m.registration_id()).collect();
    assert_eq!(ids.len(), 8);
    let there = registry();
    let _theirs = there.mount_instance(Probe::new(), "p0").unwrap();
    for (i, mounted) in mounts.iter().enumerate() {
        let ok = call(
            &here,
            poke()
                .instance(format!("p{i}"))
                .registration(mounted.registration_id()),
        )
        .await;
        assert!(ok.is_ok(), "{ok:?}");
        let foreign = call(
            &there,
            poke()
                .instance("p0")
                .registration(mounted.registration_id()),
        )
        .await;
        let error = foreign.error().unwrap();
        assert_eq!(error.code(), ErrorCode::StaleCapability, "{error:?}");
        assert_eq!(error.detail("reason"), Some(&json!("surface-reloaded")));
    }
}

/// The registry is built in a paused runtime and first read on a plain
/// thread: the default clock still follows the runtime's paused time.
#[test]
fn the_default_clock_follows_the_runtime_the_registry_was_built_in() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let registry = runtime.block_on(async { registry() });
    let mounted = {
        let registry = registry.clone();
        std::thread::spawn(move || {
            let mounted = registry.mount(Probe::new()).unwrap();
            let id = mounted.registration_id().to_owned();
            drop(mounted);
            id
        })
        .join()
        .unwrap()
    };
    runtime.block_on(async {
        let unmounted = call(&registry, poke().registration(&mounted)).await;
        assert_eq!(code(&unmounted), Some(ErrorCode::ComponentUnmounted));
        // Past the tombstone's time to live (5 min) in paused time.
        tokio::time::advance(registry.limits().tombstone_ttl + Duration::from_secs(1)).await;
        let gone = call(&registry, poke().registration(&mounted)).await;
        assert_eq!(code(&gone), Some(ErrorCode::CapabilityNotFound), "{gone:?}");
    });
}

#[tokio::test(start_paused = true)]
async fn tombstones_answer_unmounted_until_evicted_or_expired() {
    let registry = Registry::builder()
        .environment(Environment::Test)
        .limits(Limits::default().tombstone_size(3))
        .build();
    let first = registry.mount_instance(Probe::new(), "first").unwrap();
    let first_id = first.registration_id().to_owned();
    drop(first);
    let unmounted = call(&registry, poke().registration(&first_id)).await;
    assert_eq!(code(&unmounted), Some(ErrorCode::ComponentUnmounted));
    // Touching the first tombstone many times keeps it one entry.
    for _ in 0..200 {
        let again = call(&registry, poke().registration(&first_id)).await;
        assert_eq!(code(&again), Some(ErrorCode::ComponentUnmounted));
    }
    let mut later = Vec::new();
    for i in 0..2 {
        let mounted = registry
            .mount_instance(Probe::new(), &format!("later{i}"))
            .unwrap();
        later.push(mounted.registration_id().to_owned());
    }
    // Three tombstones fit: the first is still known.
    let still = call(&registry, poke().registration(&first_id)).await;
    assert_eq!(code(&still), Some(ErrorCode::ComponentUnmounted));
    // A fourth evicts the oldest.
    drop(registry.mount_instance(Probe::new(), "fourth").unwrap());
    let evicted = call(&registry, poke().registration(&first_id)).await;
    assert_eq!(
        code(&evicted),
        Some(ErrorCode::CapabilityNotFound),
        "{evicted:?}"
    );
    for id in &later {
        let known = call(&registry, poke().registration(id)).await;
        assert_eq!(code(&known), Some(ErrorCode::ComponentUnmounted));
    }
    tokio::time::advance(registry.limits().tombstone_ttl).await;
    for id in &later {
        let expired = call(&registry, poke().registration(id)).await;
        assert_eq!(code(&expired), Some(ErrorCode::CapabilityNotFound));
    }
    // By type: an unmounted type answers unmounted, then not found once expired.
    let _ = registry.mount(Probe::new()).unwrap();
    let by_type = call(&registry, poke()).await;
    assert_eq!(code(&by_type), Some(ErrorCode::ComponentUnmounted));
    tokio::time::advance(registry.limits().tombstone_ttl).await;
    let by_type = call(&registry, poke()).await;
    assert_eq!(code(&by_type), Some(ErrorCode::CapabilityNotFound));
}

#[tokio::test(start_paused = true)]
async fn dedupe_runs_once_per_consumer_and_id_and_stays_bounded() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(Arc::clone(&probe)).unwrap();
    let as_consumer = |id: &str| InvokeOptions::consumer(consumer(id));
    let kept = registry
        .invoke(poke().invocation_id("keep"), as_consumer("a"))
        .await;
    assert!(kept.is_ok());
    for i in 0..5_000 {
        let id = format!("call-{i}");
        let result = registry
            .invoke(poke().invocation_id(&id), as_consumer("b"))
            .await;
        assert!(result.is_ok());
        // A retry is a cached answer, not a second run.
        let again = registry
            .invoke(poke().invocation_id(&id), as_consumer("b"))
            .await;
        assert_eq!(again, result);
        // The other consumer's record is touched all along.
        let cached = registry
            .invoke(poke().invocation_id("keep"), as_consumer("a"))
            .await;
        assert_eq!(cached, kept);
        assert!(registry.dedupe_len() <= registry.limits().dedupe_cache_size);
    }
    assert_eq!(probe.runs(), 5_001);
    // The heaviest consumer gave up its oldest records, not `a`'s one.
    let first = registry
        .invoke(poke().invocation_id("call-0"), as_consumer("b"))
        .await;
    assert!(first.is_ok());
    assert_eq!(probe.runs(), 5_002, "call-0 was evicted and ran again");
    let last = registry
        .invoke(poke().invocation_id("call-4999"), as_consumer("b"))
        .await;
    assert!(last.is_ok());
    assert_eq!(probe.runs(), 5_002, "call-4999 is still remembered");
    // Expired records run again.
    tokio::time::advance(registry.limits().dedupe_cache_ttl).await;
    let _ = registry
        .invoke(poke().invocation_id("keep"), as_consumer("a"))
        .await;
    assert_eq!(probe.runs(), 5_003);
}

#[tokio::test]
async fn ambiguity_lists_instances_in_order_whatever_the_mount_order() {
    for order in [["c", "a", "b"], ["b", "c", "a"], ["a", "b", "c"]] {
        let registry = registry();
        let _mounts: Vec<_> = order
            .iter()
            .map(|i| registry.mount_instance(Probe::new(), i).unwrap())
            .collect();
        let result = call(&registry, poke()).await;
        let error = result.error().unwrap();
        assert_eq!(error.code(), ErrorCode::AmbiguousInstance, "{error:?}");
        let instances: Vec<&str> = error
            .detail("instances")
            .and_then(serde_json::Value::as_array)
            .unwrap()
            .iter()
            .map(|i| i["instanceId"].as_str().unwrap())
            .collect();
        assert_eq!(instances, ["a", "b", "c"]);
        let snapshot = registry.snapshot(&SnapshotOptions::default());
        let listed: Vec<&str> = snapshot
            .components()
            .iter()
            .map(|c| c.instance_id())
            .collect();
        assert_eq!(listed, ["a", "b", "c"]);
    }
}

/// Records the kinds it sees, in order.
#[derive(Default)]
struct Kinds(Mutex<Vec<(AuditKind, Option<String>)>>);

impl AuditSink for Kinds {
    fn record(&self, event: &AuditEvent) {
        self.0.lock().unwrap().push((
            event.kind,
            event.invocation_id.as_deref().map(str::to_owned),
        ));
    }
}

fn invocation_kinds(events: &[(AuditKind, Option<String>)], id: &str) -> Vec<AuditKind> {
    events
        .iter()
        .filter(|(_, invocation)| invocation.as_deref() == Some(id))
        .map(|(kind, _)| *kind)
        .collect()
}

#[tokio::test]
async fn every_sink_sees_each_event_once_and_in_order() {
    let custom = Arc::new(Kinds::default());
    let policy_sink = Arc::new(MemoryAuditSink::new(100));
    let registry = Registry::builder()
        .environment(Environment::Test)
        .audit_sink(custom.clone())
        .policy(agent_surface::policy::audit(policy_sink.clone()))
        .build();
    let _probe = registry.mount(Probe::new()).unwrap();
    assert!(call(&registry, poke().invocation_id("one")).await.is_ok());
    let seen = custom.0.lock().unwrap().clone();
    assert_eq!(
        invocation_kinds(&seen, "one"),
        [AuditKind::InvocationStarted, AuditKind::InvocationSettled]
    );
    assert!(registry.audit_log().is_empty(), "a custom sink replaces it");
    let policy_seen: Vec<AuditKind> = policy_sink
        .events()
        .iter()
        .filter(|e| e.invocation_id.as_deref() == Some("one"))
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        policy_seen,
        [AuditKind::InvocationStarted, AuditKind::InvocationSettled]
    );

    // The default memory sink, alone and with the development console.
    for environment in [Environment::Test, Environment::Development] {
        let registry = Registry::builder().environment(environment).build();
        let _probe = registry.mount(Probe::new()).unwrap();
        assert!(call(&registry, poke().invocation_id("two")).await.is_ok());
        let log: Vec<AuditKind> = registry
            .audit_log()
            .iter()
            .filter(|e| e.invocation_id.as_deref() == Some("two"))
            .map(|e| e.kind)
            .collect();
        assert_eq!(
            log,
            [AuditKind::InvocationStarted, AuditKind::InvocationSettled]
        );
    }
}

#[tokio::test]
async fn ill_formed_capability_ids_answer_as_nonexistent_ones() {
    let registry = registry();
    let _probe = registry.mount(Probe::new()).unwrap();
    let nonexistent = call(&registry, Invocation::new("view:test.nothing.here")).await;
    let expected = nonexistent.error().unwrap().clone();
    assert_eq!(expected.code(), ErrorCode::CapabilityNotFound);
    for id in [
        "",
        "view:",
        "view:test.probe",
        "VIEW:test.probe.poke",
        "view:test.probe.poke ",
        "view:test..poke",
        "domain:",
        "nope",
        "view:test.probe.poke.extra.more",
        "view:tést.probe.poke",
    ] {
        let result = call(&registry, Invocation::new(id)).await;
        assert_eq!(result.error(), Some(&expected), "{id:?}");
        assert_eq!(result.capability_id(), id);
    }
}

#[tokio::test]
async fn availability_events_tell_the_availability_that_results() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(Arc::clone(&probe)).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let _subscription = registry.subscribe(move |event| {
        if let SurfaceEvent::AvailabilityChanged { available, .. } = event {
            sink.lock().unwrap().push(*available);
        }
    });
    // `gated` is unavailable by its own `when`.
    probe.on.store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(mounted.set_availability("gated", AvailabilityOverride::unavailable("Busy")));
    assert!(mounted.set_availability("gated", AvailabilityOverride::Clear));
    let gated = call(&registry, Invocation::new("view:test.probe.gated")).await;
    assert_eq!(code(&gated), Some(ErrorCode::CapabilityNotAvailable));
    assert_eq!(*events.lock().unwrap(), [false, false]);
}

/// When every instance of a type goes, its table is kept for the next type
/// mounted; whichever type takes it, each call still reaches its own
/// instance, and a call of the type that went settles unmounted.
#[tokio::test]
async fn as_life_001_a_type_whose_instances_all_went_leaves_every_type_resolvable() {
    let registry = registry();
    for round in 0..4 {
        let mount_navs = || -> Vec<Mounted> {
            (0..3)
                .map(|i| {
                    registry
                        .mount_instance(crate::fixtures::Nav::new(), &format!("n{i}"))
                        .unwrap()
                })
                .collect()
        };
        // Alternate which type mounts first into the table left behind.
        let navs_first = (round % 2 == 1).then(mount_navs);
        let probes: Vec<Mounted> = (0..40)
            .map(|i| {
                registry
                    .mount_instance(Probe::new(), &format!("p{i}"))
                    .unwrap()
            })
            .collect();
        let navs = navs_first.unwrap_or_else(mount_navs);
        for (i, probe) in probes.iter().enumerate().step_by(7) {
            let result = call(
                &registry,
                Invocation::new("view:test.probe.read")
                    .instance(format!("p{i}"))
                    .registration(probe.registration_id()),
            )
            .await;
            assert!(result.is_ok(), "round {round}, p{i}: {result:?}");
        }
        let snapshot = registry.snapshot(&SnapshotOptions::default());
        assert_eq!(snapshot.components().len(), 43, "round {round}");
        let gone = probes[5].registration_id().to_owned();
        drop(probes);
        let result = call(
            &registry,
            Invocation::new("view:test.probe.read")
                .instance("p5")
                .registration(&gone),
        )
        .await;
        assert_eq!(
            code(&result),
            Some(ErrorCode::ComponentUnmounted),
            "round {round}"
        );
        assert_eq!(
            registry
                .snapshot(&SnapshotOptions::default())
                .components()
                .len(),
            3
        );
        drop(navs);
        assert!(
            registry
                .snapshot(&SnapshotOptions::default())
                .components()
                .is_empty()
        );
    }
}

/// A joiner waits for its twin no longer than its own time limit: a leader
/// whose future its host polled once and then holds without polling (its
/// own timeout lives in that future, so it never fires) cannot hold the
/// joiner forever. The twin ran once and runs on for its leader.
#[tokio::test(start_paused = true)]
async fn as_ident_001_a_joiner_of_a_twin_never_driven_to_its_end_times_out() {
    use std::future::Future as _;
    use std::task::Poll;

    use crate::fixtures::{Worker, work};

    let registry = registry();
    let worker = Worker::new();
    let _mounted = registry.mount(worker.clone()).unwrap();
    let options = || InvokeOptions::consumer(consumer("tester")).timeout(Duration::from_secs(5));
    let mut leader = Box::pin(registry.invoke(work("stalled-1"), options()));
    // Polled once: the handler starts and waits; then held, never polled.
    std::future::poll_fn(|cx| {
        assert!(leader.as_mut().poll(cx).is_pending());
        Poll::Ready(())
    })
    .await;
    assert_eq!(worker.started(), 1);
    let began = tokio::time::Instant::now();
    let joined = registry.invoke(work("stalled-1"), options()).await;
    assert_eq!(code(&joined), Some(ErrorCode::Timeout), "{joined:?}");
    let error = joined.error().unwrap();
    assert_eq!(error.details().unwrap()["timeoutMs"], json!(5_000));
    // Its own limit and a short grace, never longer.
    let waited = began.elapsed();
    assert!(
        waited >= Duration::from_secs(5) && waited <= Duration::from_secs(7),
        "{waited:?}"
    );
    assert_eq!(worker.started(), 1, "joined, never run twice");
    // Dropped at last, the leader settles and gives its record back.
    drop(leader);
    worker.gate.send_replace(true);
    let retried = registry.invoke(work("stalled-1"), options()).await;
    assert_eq!(code(&retried), Some(ErrorCode::Cancelled), "{retried:?}");
    assert_eq!(worker.started(), 1);
}
