//! State-driven availability (AS-VER-001, AS-AVAIL-001): an application
//! says "my state changed" through its mount handle; the registry
//! re-evaluates that registration's predicates and bumps the version —
//! heard by every consumer — only when an availability actually changed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_surface::events::SurfaceEvent;
use agent_surface::prelude::*;
use agent_surface::toolset::{Toolset, Topology};

use crate::fixtures::{Probe, registry};
use crate::procedures::{FakeBackend, Screen, mount_screen, registry_with};

fn recorder(
    registry: &Registry,
) -> (
    Arc<Mutex<Vec<SurfaceEvent>>>,
    agent_surface::events::Subscription,
) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let subscription = registry.subscribe({
        let events = Arc::clone(&events);
        move |event: &SurfaceEvent| events.lock().unwrap().push(event.clone())
    });
    (events, subscription)
}

#[test]
fn as_ver_001_invalidate_bumps_only_when_availability_changed() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let (events, _subscription) = recorder(&registry);
    let version = registry.version();

    assert!(!mounted.invalidate(), "nothing changed");
    assert_eq!(registry.version(), version);
    assert!(events.lock().unwrap().is_empty(), "and nothing was emitted");

    probe.on.store(false, Ordering::SeqCst);
    assert!(mounted.invalidate());
    assert_eq!(registry.version(), version + 1);
    {
        let events = events.lock().unwrap();
        assert!(
            events.iter().any(|e| matches!(
                e,
                SurfaceEvent::AvailabilityChanged { capability_id, available: false, .. }
                    if &**capability_id == "view:test.probe.gated"
            )),
            "{events:?}"
        );
        assert!(matches!(
            events.last(),
            Some(SurfaceEvent::SurfaceChanged { .. })
        ));
    }
    assert!(!mounted.invalidate(), "a second call finds nothing new");
    assert_eq!(registry.version(), version + 1);

    probe.on.store(true, Ordering::SeqCst);
    assert!(mounted.invalidate());
    assert_eq!(registry.version(), version + 2);
    // The unconditional bump of the specification's handle stays available.
    mounted.bump_version();
    assert_eq!(registry.version(), version + 3);
}

#[tokio::test]
async fn as_avail_001_invalidate_follows_procedure_reference_predicates() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let mounted = mount_screen(&registry, &screen);
    let version = registry.version();
    assert!(!mounted.invalidate());
    screen.select(&["d1"]);
    assert!(
        mounted.invalidate(),
        "selecting rows made the reference available"
    );
    assert_eq!(registry.version(), version + 1);
    screen.select(&["d1", "d2"]);
    assert!(!mounted.invalidate(), "still available");
    screen.select(&[]);
    assert!(mounted.invalidate());
}

#[test]
fn as_ver_001_toolset_subscriptions_hear_a_state_change_without_any_agent_call() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let toolset = Toolset::builder(&registry)
        .topology(Topology::Remote)
        .build()
        .unwrap();
    let heard = Arc::new(AtomicUsize::new(0));
    let _subscription = toolset.subscribe({
        let heard = Arc::clone(&heard);
        move |tools| {
            let gated = tools.iter().find(|t| t.name().ends_with("gated")).unwrap();
            assert!(!gated.state().available);
            heard.fetch_add(1, Ordering::SeqCst);
        }
    });
    let tools = toolset.tools();
    let gated = tools.iter().find(|t| t.name().ends_with("gated")).unwrap();
    assert!(gated.state().available);
    mounted.invalidate();
    assert_eq!(heard.load(Ordering::SeqCst), 0);
    probe.on.store(false, Ordering::SeqCst);
    mounted.invalidate();
    assert_eq!(heard.load(Ordering::SeqCst), 1);
}

#[test]
fn invalidate_on_an_unmounted_handle_does_nothing() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let other = registry.mount_instance(Probe::new(), "other").unwrap();
    drop(other);
    let version = registry.version();
    probe.on.store(false, Ordering::SeqCst);
    registry.dispose();
    assert!(!mounted.invalidate());
    assert_eq!(
        registry.version(),
        version + 1,
        "only the disposal's unmount"
    );
}
