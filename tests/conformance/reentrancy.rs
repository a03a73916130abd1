//! AS-EVT-001, nested mutations: a registry call made from a listener
//! (mount, unmount, `set_enabled`, …) takes effect at once — it returns its
//! result synchronously — while its events are queued behind the event being
//! dispatched. No listener is ever re-entered. (The specification queues the
//! call itself; a Rust `mount` returns `Result<Mounted, MountError>`, which it
//! cannot know before running, so only the events are deferred. The crate docs'
//! "What the runtime guarantees" states this.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_surface::events::SurfaceEvent;
use agent_surface::prelude::*;
use agent_surface_tests::Table;

use crate::fixtures::{Nav, Probe, registry};

fn label(event: &SurfaceEvent) -> String {
    match event {
        SurfaceEvent::SurfaceChanged { surface_version } => format!("changed:{surface_version}"),
        SurfaceEvent::ComponentRegistered { component_type, .. } => {
            format!("registered:{component_type}")
        }
        SurfaceEvent::ComponentUnregistered { component_type, .. } => {
            format!("unregistered:{component_type}")
        }
        SurfaceEvent::AvailabilityChanged {
            capability_id,
            available,
            ..
        } => format!("available:{capability_id}={available}"),
        other => format!("{other:?}"),
    }
}

/// Counts how deep inside listeners the current thread is.
#[derive(Default)]
struct Depth {
    now: AtomicUsize,
    reentered: AtomicBool,
}

impl Depth {
    fn enter(&self) {
        if self.now.fetch_add(1, Ordering::SeqCst) > 0 {
            self.reentered.store(true, Ordering::SeqCst);
        }
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn as_evt_001_nested_mutations_apply_at_once_and_their_events_follow_the_current_dispatch() {
    let registry = registry();
    let table = Arc::new(Mutex::new(Some(
        registry.mount(Arc::new(Table::default())).unwrap(),
    )));
    let nav = registry.mount(Nav::new()).unwrap(); // version 2
    let nav = Arc::new(nav);
    let mounted_later: Arc<Mutex<Vec<Mounted>>> = Arc::default();
    let depth = Arc::new(Depth::default());
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let version_seen_by_second: Arc<Mutex<Option<u64>>> = Arc::default();

    // The first listener mutates the registry while `test.probe` is being announced.
    let _mutator = registry.subscribe({
        let (registry, table, nav, mounted_later, depth) = (
            registry.clone(),
            Arc::clone(&table),
            Arc::clone(&nav),
            Arc::clone(&mounted_later),
            Arc::clone(&depth),
        );
        move |event| {
            depth.enter();
            if let SurfaceEvent::ComponentRegistered { component_type, .. } = event
                && &**component_type == "test.probe"
            {
                // Unmount: applied now.
                drop(table.lock().unwrap().take());
                assert!(
                    registry
                        .snapshot(&SnapshotOptions::default())
                        .capability("view:fixtures.table.selectRows")
                        .is_none()
                );
                // Disable: applied now.
                nav.set_enabled(false);
                // Mount: applied now, its handle returned at once.
                let again = registry
                    .mount_instance(Arc::new(Table::default()), "again")
                    .unwrap();
                assert_eq!(
                    again.status(),
                    agent_surface::registry::RegistrationStatus::Active
                );
                mounted_later.lock().unwrap().push(again);
                assert_eq!(registry.version(), 6);
            }
            depth.leave();
        }
    });
    // The second listener receives the current event before any nested one.
    let _recorder = registry.subscribe({
        let (registry, seen, depth, version_seen_by_second) = (
            registry.clone(),
            Arc::clone(&seen),
            Arc::clone(&depth),
            Arc::clone(&version_seen_by_second),
        );
        move |event| {
            depth.enter();
            if matches!(event, SurfaceEvent::ComponentRegistered { component_type, .. } if &**component_type == "test.probe")
            {
                *version_seen_by_second.lock().unwrap() = Some(registry.version());
            }
            seen.lock().unwrap().push(label(event));
            depth.leave();
        }
    });

    let _probe = registry.mount(Probe::new()).unwrap(); // version 3
    let expected = [
        "registered:test.probe",
        "changed:3",
        "unregistered:fixtures.table",
        "changed:4",
        "available:view:test.nav.go=false",
        "changed:5",
        "registered:fixtures.table",
        "changed:6",
    ];
    assert_eq!(
        *seen.lock().unwrap(),
        expected,
        "every listener got the current event first; nested events follow in mutation order"
    );
    assert!(!depth.reentered.load(Ordering::SeqCst), "never re-entered");
    assert_eq!(
        *version_seen_by_second.lock().unwrap(),
        Some(6),
        "the nested mutations were already applied when the next listener ran"
    );
}

#[test]
fn as_evt_001_a_listener_that_always_mutates_is_never_reentered() {
    let registry = registry();
    let probe = Arc::new(registry.mount(Probe::new()).unwrap()); // version 1
    let depth = Arc::new(Depth::default());
    let versions: Arc<Mutex<Vec<u64>>> = Arc::default();
    let _listener = registry.subscribe({
        let (probe, depth, versions) = (
            Arc::clone(&probe),
            Arc::clone(&depth),
            Arc::clone(&versions),
        );
        move |event| {
            depth.enter();
            if let SurfaceEvent::SurfaceChanged { surface_version } = event {
                let version: u64 = surface_version.parse().unwrap();
                versions.lock().unwrap().push(version);
                if version < 10 {
                    probe.bump_version(); // queues the next surface-changed
                }
            }
            depth.leave();
        }
    });
    probe.bump_version(); // version 2, then the listener takes it to 10
    assert_eq!(*versions.lock().unwrap(), (2..=10).collect::<Vec<_>>());
    assert!(!depth.reentered.load(Ordering::SeqCst));
    assert_eq!(registry.version(), 10);
}
