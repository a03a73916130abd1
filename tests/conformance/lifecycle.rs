//! Lifecycle, versioning, events and snapshots: AS-LIFE-*, AS-VER-001,
//! AS-EVT-001, AS-SNAP-001, AS-SNAP-003, AS-CONTRACT-001.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use agent_surface::error::DefinitionErrorKind;
use agent_surface::events::SurfaceEvent;
use agent_surface::prelude::*;
use agent_surface::registry::AvailabilityOverride;
use agent_surface::registry::{
    DuplicatePolicy, GuardDecision, MountError, RegistrationStatus, Registry,
};
use agent_surface::snapshot::Budget;
use agent_surface_tests::{Defective, Table};
use proptest::prelude::*;
use serde_json::json;

use crate::fixtures::{Probe, call, code, registry};

#[tokio::test]
async fn as_life_001_mount_is_live_at_once_and_unmount_removes_and_aborts() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    assert_eq!(mounted.status(), RegistrationStatus::Active);
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert!(snapshot.capability("view:test.probe.poke").is_some());
    let ok = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": ["a"]})),
    )
    .await;
    assert!(ok.is_ok(), "{ok:?}");

    // In flight when the component unmounts: aborted, COMPONENT_UNMOUNTED.
    let in_flight = tokio::spawn({
        let registry = registry.clone();
        async move { call(&registry, Invocation::new("view:test.probe.hold")).await }
    });
    crate::fixtures::settle_tasks().await;
    drop(mounted);
    let result = in_flight.await.unwrap();
    assert_eq!(code(&result), Some(ErrorCode::ComponentUnmounted));
    assert_eq!(
        result.error().unwrap().detail("phase"),
        Some(&json!("mid-flight"))
    );
    assert!(
        registry
            .snapshot(&SnapshotOptions::default())
            .components()
            .is_empty()
    );
    assert_eq!(probe.runs(), 1, "the held handler never finished");
}

#[test]
fn as_life_001_no_executable_reference_survives_unmount() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    assert_eq!(Arc::strong_count(&probe), 2);
    drop(mounted);
    assert_eq!(
        Arc::strong_count(&probe),
        1,
        "the registry dropped its reference"
    );
}

#[tokio::test]
async fn as_life_002_only_enabled_and_availability_change_and_defects_always_fail() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let id = mounted.registration_id().to_owned();
    let version = registry.version();
    mounted.set_enabled(false);
    assert_eq!(mounted.registration_id(), id, "identity is preserved");
    assert_eq!(registry.version(), version + 1);
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    let (_, poke) = snapshot.capability("view:test.probe.poke").unwrap();
    assert!(!poke.available());
    assert_eq!(poke.unavailable_reason(), Some("component-disabled"));
    let result = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": ["a"]})),
    )
    .await;
    assert_eq!(code(&result), Some(ErrorCode::CapabilityNotAvailable));
    assert_eq!(
        result.error().unwrap().detail("reason"),
        Some(&json!("component-disabled"))
    );
    mounted.set_enabled(true);

    // Structural defects are raised in every environment.
    for environment in [
        Environment::Production,
        Environment::Development,
        Environment::Test,
    ] {
        let registry = Registry::builder().environment(environment).build();
        let err = registry
            .mount_instance(Probe::new(), "not valid!")
            .unwrap_err();
        assert!(
            matches!(err, MountError::Definition(ref e) if e.kind() == DefinitionErrorKind::InvalidId),
            "{err}"
        );
        let err = registry.mount(Arc::new(Defective)).unwrap_err();
        assert!(
            matches!(err, MountError::Definition(ref e) if e.kind() == DefinitionErrorKind::UnsupportedSchema)
        );
    }
}

#[tokio::test]
async fn as_life_002_handlers_are_read_live_without_a_version_bump() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let version = registry.version();
    probe.runs.store(41, Ordering::SeqCst);
    let result = call(&registry, Invocation::new("view:test.probe.read")).await;
    assert_eq!(result.output(), Some(&json!({"runs": 41})));
    assert_eq!(registry.version(), version);
}

#[tokio::test]
async fn as_life_003_first_wins_by_default_and_replace_aborts_the_predecessor() {
    let registry = registry();
    let events = Arc::new(Mutex::new(Vec::new()));
    let _subscription = registry.subscribe({
        let events = Arc::clone(&events);
        move |event| events.lock().unwrap().push(event.clone())
    });
    let first = registry.mount(Probe::new()).unwrap();
    let second = registry.mount(Probe::new()).unwrap();
    assert_eq!(second.status(), RegistrationStatus::Rejected);
    assert_eq!(first.status(), RegistrationStatus::Active);
    assert!(events.lock().unwrap().iter().any(|event| matches!(
        event,
        SurfaceEvent::ComponentRejected {
            reason: "duplicate",
            ..
        }
    )));
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert_eq!(snapshot.components().len(), 1);
    assert_eq!(
        snapshot.components()[0].registration_id(),
        first.registration_id()
    );
    drop(second); // a dead handle unmounts nothing
    assert_eq!(first.status(), RegistrationStatus::Active);

    let registry = Registry::builder()
        .duplicate_instances(DuplicatePolicy::Replace)
        .build();
    let old = registry.mount(Probe::new()).unwrap();
    let in_flight = tokio::spawn({
        let registry = registry.clone();
        async move { call(&registry, Invocation::new("view:test.probe.hold")).await }
    });
    crate::fixtures::settle_tasks().await;
    let new = registry.mount(Probe::new()).unwrap();
    assert_eq!(new.status(), RegistrationStatus::Active);
    assert_eq!(old.status(), RegistrationStatus::Unregistered);
    assert_eq!(
        code(&in_flight.await.unwrap()),
        Some(ErrorCode::ComponentUnmounted)
    );
    // Duplicate capability names inside one definition are structural: the
    // macro rejects them (ui-tests/names/).
}

#[test]
fn as_life_003_registration_guard_rejects_with_a_dead_handle() {
    let registry = Registry::builder()
        .on_register(|candidate| {
            if candidate.origin == "first-party" && candidate.component_type != "test.probe" {
                GuardDecision::Accept
            } else {
                GuardDecision::Reject
            }
        })
        .build();
    let rejected = registry.mount(Probe::new()).unwrap();
    assert_eq!(rejected.status(), RegistrationStatus::Rejected);
    assert!(rejected.registration_id().starts_with("reg_"));
    assert_eq!(
        registry.version(),
        0,
        "a rejection is not a surface mutation"
    );
    let accepted = registry.mount(Arc::new(Table::default())).unwrap();
    assert_eq!(accepted.status(), RegistrationStatus::Active);
}

#[test]
fn as_life_001_a_mount_racing_disposal_is_refused_not_left_live() {
    // The guard runs after the mount's first disposal check and before its
    // insertion: disposing there is the race, made deterministic.
    let slot: Arc<std::sync::OnceLock<Registry>> = Arc::default();
    let seen = Arc::clone(&slot);
    let registry = Registry::builder()
        .on_register(move |_| {
            if let Some(registry) = seen.get() {
                registry.dispose();
            }
            GuardDecision::Accept
        })
        .build();
    let _ = slot.set(registry.clone());
    let mounted = registry.mount(Probe::new());
    assert!(matches!(mounted, Err(MountError::Disposed)), "{mounted:?}");
    assert!(registry.is_disposed());
    assert_eq!(registry.version(), 0, "nothing was registered");
}

#[tokio::test]
async fn as_life_005_remount_gets_a_new_registration_and_the_old_one_is_stale() {
    let registry = registry();
    let first = registry.mount(Probe::new()).unwrap();
    let old_id = first.registration_id().to_owned();
    drop(first);
    let second = registry.mount(Probe::new()).unwrap();
    assert_ne!(second.registration_id(), old_id);
    let result = call(
        &registry,
        Invocation::new("view:test.probe.read").registration(&old_id),
    )
    .await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::StaleCapability);
    assert_eq!(
        error.detail("reason"),
        Some(&json!("registration-replaced"))
    );
    assert_eq!(
        error.detail("liveRegistrationId"),
        Some(&json!(second.registration_id()))
    );
}

#[derive(Clone, Debug)]
enum Op {
    Mount(u8),
    Unmount(u8),
    Toggle(u8),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            (0u8..5).prop_map(Op::Mount),
            (0u8..5).prop_map(Op::Unmount),
            (0u8..5).prop_map(Op::Toggle),
        ],
        1..40,
    )
}

proptest! {
    #[test]
    fn as_life_004_arbitrary_sequences_keep_identities_unique_and_versions_monotone(ops in ops()) {
        let registry = registry();
        let mut mounted: Vec<Option<Mounted>> = (0..5).map(|_| None).collect();
        let mut all_ids = std::collections::HashSet::new();
        let mut version = registry.version();
        for op in ops {
            match op {
                Op::Mount(k) => {
                    let slot = &mut mounted[usize::from(k)];
                    if slot.is_none() {
                        let handle = registry.mount_instance(Probe::new(), &format!("i{k}")).unwrap();
                        prop_assert!(all_ids.insert(handle.registration_id().to_owned()), "registration ids are never reused");
                        *slot = Some(handle);
                    }
                }
                Op::Unmount(k) => {
                    mounted[usize::from(k)] = None;
                }
                Op::Toggle(k) => {
                    if let Some(handle) = &mounted[usize::from(k)] {
                        handle.set_enabled(k % 2 == 0);
                    }
                }
            }
            let now = registry.version();
            prop_assert!(now >= version, "versions never go back");
            version = now;
            let snapshot = registry.snapshot(&SnapshotOptions::default());
            let live: Vec<&str> = snapshot.components().iter().map(|c| c.registration_id()).collect();
            let expected: Vec<String> = mounted.iter().flatten().map(|h| h.registration_id().to_owned()).collect();
            prop_assert_eq!(live.len(), expected.len());
            for id in &expected {
                prop_assert!(live.contains(&id.as_str()));
            }
            prop_assert_eq!(snapshot.surface_version(), now);
        }
    }
}

#[tokio::test]
async fn as_ver_001_version_bump_matrix() {
    let registry = registry();
    assert_eq!(registry.version(), 0);
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap(); // register: +1
    assert_eq!(registry.version(), 1);
    mounted.set_enabled(false); // pushed change: +1
    assert_eq!(registry.version(), 2);
    mounted.set_enabled(false); // no change: +0
    assert_eq!(registry.version(), 2);
    mounted.set_enabled(true);
    assert_eq!(registry.version(), 3);
    assert!(mounted.set_availability("poke", AvailabilityOverride::unavailable("Paused")));
    assert_eq!(registry.version(), 4);
    mounted.bump_version(); // +1
    assert_eq!(registry.version(), 5);
    // Handler state changes and lazy `when()` drift do not bump.
    probe.runs.store(9, Ordering::SeqCst);
    probe.on.store(false, Ordering::SeqCst);
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert!(
        !snapshot
            .capability("view:test.probe.gated")
            .unwrap()
            .1
            .available()
    );
    assert_eq!(registry.version(), 5);
    let _ = call(&registry, Invocation::new("view:test.probe.read")).await;
    assert_eq!(registry.version(), 5);
    let replacement = Registry::builder()
        .duplicate_instances(DuplicatePolicy::Replace)
        .build();
    let _a = replacement.mount(Probe::new()).unwrap();
    let _b = replacement.mount(Probe::new()).unwrap(); // replace: +1
    assert_eq!(replacement.version(), 2);
    drop(mounted); // unregister: +1
    assert_eq!(registry.version(), 6);
}

#[tokio::test]
async fn as_evt_001_events_are_ordered_isolated_and_never_reentrant() {
    let registry = registry();
    let seen: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let nested: Arc<Mutex<Vec<Mounted>>> = Arc::new(Mutex::new(Vec::new()));
    let _panicking = registry.subscribe(|_| {
        #[allow(clippy::panic)]
        {
            panic!("a listener bug");
        }
    });
    let _recorder = registry.subscribe({
        let seen = Arc::clone(&seen);
        let nested = Arc::clone(&nested);
        let registry = registry.clone();
        move |event| {
            let label = match event {
                SurfaceEvent::SurfaceChanged { surface_version } => {
                    // Dispatched after the mutation completed.
                    assert!(registry.version() >= surface_version.parse::<u64>().unwrap());
                    format!("changed:{surface_version}")
                }
                SurfaceEvent::ComponentRegistered { component_type, .. } => {
                    if &**component_type == "test.probe" && nested.lock().unwrap().is_empty() {
                        // A mutation from a listener: applied now, its events queued.
                        let table = registry.mount(Arc::new(Table::default())).unwrap();
                        nested.lock().unwrap().push(table);
                    }
                    format!("registered:{component_type}")
                }
                SurfaceEvent::InvocationStarted { .. } => "started".to_owned(),
                SurfaceEvent::InvocationSettled { .. } => "settled".to_owned(),
                other => format!("{other:?}"),
            };
            seen.lock().unwrap().push(label);
        }
    });
    let _probe = registry.mount(Probe::new()).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "registered:test.probe",
            "changed:1",
            "registered:fixtures.table",
            "changed:2"
        ],
        "the nested mount's events follow the current ones; the panicking listener hurt nothing"
    );
    seen.lock().unwrap().clear();
    let _ = call(&registry, Invocation::new("view:test.probe.read")).await;
    assert_eq!(*seen.lock().unwrap(), ["started", "settled"]);
}

/// An observation that must never run during a snapshot.
struct Tripwire;

/// A component whose observation panics when read.
#[agent_component(type = "test.tripwire")]
impl Tripwire {
    /// Never call me during discovery.
    #[observation]
    fn state(&self) -> u32 {
        #[allow(clippy::panic)]
        {
            panic!("snapshot ran an observation");
        }
    }
}

#[test]
fn as_snap_001_snapshot_is_synchronous_and_never_runs_observations() {
    let registry = registry();
    let _tripwire = registry.mount(Arc::new(Tripwire)).unwrap();
    let probe = Probe::new();
    let _probe = registry.mount(probe.clone()).unwrap();
    let before = registry.audit_log().len();
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert_eq!(snapshot.components().len(), 2);
    assert_eq!(probe.runs(), 0);
    assert_eq!(registry.audit_log().len(), before, "no side effects");
    let json = snapshot.to_json();
    assert!(
        json["components"][0]["observations"][0]
            .get("output")
            .is_none(),
        "a catalog, not a state dump"
    );
}

/// A low-priority component.
struct Low;
/// Low priority.
#[agent_component(type = "a.low", priority = -1)]
impl Low {
    /// Read.
    #[observation]
    fn read(&self) -> u8 {
        0
    }
}

/// A high-priority component.
struct High;
/// High priority.
#[agent_component(type = "z.high", priority = 10)]
impl High {
    /// Read.
    #[observation]
    fn read(&self) -> u8 {
        0
    }
}

#[test]
fn as_snap_003_ordering_is_deterministic_and_budgets_mark_truncation() {
    let registry = registry();
    // Mount in a scrambled order.
    let _b = registry.mount_instance(Probe::new(), "b").unwrap();
    let _low = registry.mount(Arc::new(Low)).unwrap();
    let _a = registry.mount_instance(Probe::new(), "a").unwrap();
    let _high = registry.mount(Arc::new(High)).unwrap();
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    let order: Vec<(String, String)> = snapshot
        .components()
        .iter()
        .map(|c| (c.component_type().to_owned(), c.instance_id().to_owned()))
        .collect();
    assert_eq!(
        order,
        [
            ("z.high".into(), "default".into()),
            ("test.probe".into(), "a".into()),
            ("test.probe".into(), "b".into()),
            ("a.low".into(), "default".into()),
        ]
    );
    assert_eq!(snapshot.truncated(), None);
    assert!(snapshot.to_json().get("truncated").is_none());

    let budget = SnapshotOptions::default().budget(Budget::default().max_components(2));
    let truncated = registry.snapshot(&budget);
    assert_eq!(truncated.components().len(), 2);
    assert_eq!(truncated.truncated(), Some(2));
    assert_eq!(
        truncated.to_json()["truncated"],
        json!({"droppedComponents": 2})
    );
    assert_eq!(
        truncated.components()[0].component_type(),
        "z.high",
        "lowest priority dropped first"
    );

    let bytes = SnapshotOptions::default().budget(Budget::default().max_bytes(800));
    let small = registry.snapshot(&bytes);
    assert!(small.truncated().is_some());
    assert!(serde_json::to_vec(small.components()).unwrap().len() <= 800);
}

#[test]
fn snapshot_json_has_the_specified_shape_and_honours_scope_and_filters() {
    let registry = registry();
    let probe = Probe::new();
    let _probe = registry.mount(probe.clone()).unwrap();
    let _table = registry.mount(Arc::new(Table::default())).unwrap();
    probe.on.store(false, Ordering::SeqCst);
    let snapshot = registry.snapshot(&SnapshotOptions::default().scope(["test"]));
    let json = snapshot.to_json();
    assert!(json["surfaceId"].as_str().unwrap().starts_with("srf_"));
    assert_eq!(
        json["surfaceVersion"],
        json!(registry.version().to_string())
    );
    assert!(json["capturedAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(json["procedures"], json!([]));
    let components = json["components"].as_array().unwrap();
    assert_eq!(
        components.len(),
        1,
        "scope `test` excludes `fixtures.table`"
    );
    let probe_json = &components[0];
    for key in [
        "type",
        "instanceId",
        "registrationId",
        "description",
        "observations",
        "actions",
    ] {
        assert!(probe_json.get(key).is_some(), "{key}");
    }
    let gated = probe_json["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "gated")
        .unwrap();
    assert_eq!(gated["available"], json!(false));
    assert_eq!(
        gated["unavailableReason"],
        json!("Switch the probe on first")
    );
    for key in [
        "capabilityId",
        "inputSchema",
        "effect",
        "idempotent",
        "reversible",
        "confirmation",
    ] {
        assert!(gated.get(key).is_some(), "{key}");
    }
    let without = registry.snapshot(
        &SnapshotOptions::default()
            .scope(["test.probe"])
            .include_unavailable(false),
    );
    assert!(without.capability("view:test.probe.gated").is_none());
    assert!(without.capability("view:test.probe.poke").is_some());
    assert!(
        registry
            .snapshot(&SnapshotOptions::default().scope(["tes"]))
            .components()
            .is_empty(),
        "prefixes match whole segments"
    );
}

#[test]
fn as_contract_001_only_checked_macro_contracts_can_be_mounted() {
    // `Registry::mount` takes `Arc<T: Component>`; `Component` is implemented
    // by `#[agent_component]` (ui-tests/placement/ shows the compile errors),
    // and every contract is checked before it is bound, in every environment.
    let registry = registry();
    let err = registry.mount(Arc::new(Defective)).unwrap_err();
    assert!(err.to_string().contains("UNSUPPORTED_SCHEMA"), "{err}");
    assert_eq!(registry.version(), 0);
}

#[test]
fn a_mount_builder_shows_its_instance_as_given() {
    let registry = crate::fixtures::registry();
    assert_eq!(
        format!(
            "{:?}",
            registry
                .mounting(crate::fixtures::Probe::new())
                .instance("x")
        ),
        r#"MountBuilder { instance: Some("x"), enabled: None, references: 0, .. }"#
    );
}
