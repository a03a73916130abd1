//! The testing harness as the reference consumer: AS-TEST-001.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::clock::Clock;
use agent_surface::policy::has_permission;
use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use agent_surface::testing::{Call, Exposure, ObserveError, TestSurface};
use serde_json::json;

use crate::fixtures::{Counted, Probe};

/// A component whose observation moves the surface (it must not).
struct Sneaky {
    other: Mutex<Option<Mounted>>,
}

/// A component that misbehaves.
#[agent_component(type = "test.sneaky")]
impl Sneaky {
    /// Reads, and unmounts something while doing so.
    #[observation]
    fn read(&self) -> u32 {
        if let Ok(mut other) = self.other.lock() {
            other.take();
        }
        1
    }
}

/// Billing, only for billing staff.
#[agent_component(type = "test.billing", policies = [has_permission("billing:read")])]
impl Billing {
    /// The balance.
    #[observation]
    fn balance(&self) -> i64 {
        42
    }
}
struct Billing;

fn registry_of(surface: &TestSurface) -> &Registry {
    surface.registry()
}

#[tokio::test]
async fn as_test_001_invoke_observe_and_capture_ref() {
    let surface = TestSurface::new();
    let probe = Probe::new();
    let mounted = registry_of(&surface).mount(probe.clone()).unwrap();
    // invoke: fresh invocation ids, the registration id from the snapshot.
    let poked = surface
        .invoke("view:test.probe.poke", json!({"ids": ["a"]}))
        .await;
    assert!(poked.is_ok());
    assert!(poked.invocation_id().starts_with("test-"));
    let counted: Counted = surface.observe("view:test.probe.read").await.unwrap();
    assert_eq!(counted.runs, 1);
    // capture_ref, then a remount: the captured token is stale.
    let captured = surface.capture_ref("view:test.probe.poke").unwrap();
    assert_eq!(captured.registration_id, mounted.registration_id());
    drop(mounted);
    let gone = surface
        .invoke_with(
            "view:test.probe.poke",
            json!({"ids": ["a"]}),
            Call::default().registration(captured.registration_id.clone()),
        )
        .await;
    assert_eq!(gone.error().unwrap().code(), ErrorCode::ComponentUnmounted);
    let _again = registry_of(&surface).mount(probe.clone()).unwrap();
    let stale = surface
        .invoke_with(
            "view:test.probe.poke",
            json!({"ids": ["a"]}),
            Call::default().registration(captured.registration_id),
        )
        .await;
    assert_eq!(
        stale.error().unwrap().detail("reason"),
        Some(&json!("registration-replaced"))
    );
    // A typed observation of the wrong shape fails clearly.
    let wrong: Result<String, ObserveError> = surface.observe("view:test.probe.read").await;
    assert!(matches!(wrong, Err(ObserveError::Type(_))));
}

#[tokio::test]
async fn as_test_001_observe_fails_when_the_surface_moves() {
    let surface = TestSurface::new();
    let victim = registry_of(&surface).mount(Probe::new()).unwrap();
    let sneaky = Arc::new(Sneaky {
        other: Mutex::new(Some(victim)),
    });
    let _mounted = registry_of(&surface).mount(sneaky).unwrap();
    let moved = surface.observe::<u32>("view:test.sneaky.read").await;
    assert!(
        matches!(moved, Err(ObserveError::SurfaceMoved { .. })),
        "{moved:?}"
    );
}

#[tokio::test]
async fn as_test_001_hidden_and_disabled_are_told_apart_per_host() {
    let surface = TestSurface::new();
    let probe = Probe::new();
    let _probe = registry_of(&surface).mount(probe.clone()).unwrap();
    let _billing = registry_of(&surface).mount(Arc::new(Billing)).unwrap();
    surface.assert_exposed("view:test.probe.gated");
    probe.on.store(false, std::sync::atomic::Ordering::SeqCst);
    surface.assert_unavailable("view:test.probe.gated", Some("Switch the probe on first"));
    surface.assert_not_exposed("view:test.billing.balance");
    surface.as_host(HostContext::new().with("user", json!({"permissions": ["billing:read"]})));
    surface.assert_exposed("view:test.billing.balance");
    assert_eq!(
        surface.exposure("view:test.nothing.here"),
        Exposure::NotExposed
    );
}

#[tokio::test]
async fn as_test_001_confirmations_and_events() {
    let surface = TestSurface::new();
    let probe = Probe::new();
    let _probe = registry_of(&surface).mount(probe.clone()).unwrap();
    let asked = surface
        .invoke("view:test.probe.guarded", json!({"ids": ["a"]}))
        .await;
    assert_eq!(
        asked.error().unwrap().code(),
        ErrorCode::ConfirmationRequired
    );
    let pending = surface.pending();
    assert_eq!(pending[0].input, json!({"ids": ["a"]}));
    // Expiry is driven by the harness clock.
    surface.expire(&pending[0].confirmation_id);
    assert!(surface.pending().is_empty());
    let late = surface
        .invoke_with(
            "view:test.probe.guarded",
            json!({"ids": ["a"]}),
            Call::default().confirmation(pending[0].confirmation_id.to_string()),
        )
        .await;
    assert_eq!(
        late.error().unwrap().detail("reason"),
        Some(&json!("expired"))
    );
    // Deny.
    let asked = surface
        .invoke("view:test.probe.guarded", json!({"ids": ["b"]}))
        .await;
    let id = asked
        .error()
        .unwrap()
        .detail("confirmationId")
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    surface.deny(&id).unwrap();
    assert!(surface.pending().is_empty());
    // Approve and run.
    let asked = surface
        .invoke("view:test.probe.guarded", json!({"ids": ["c"]}))
        .await;
    let id = asked
        .error()
        .unwrap()
        .detail("confirmationId")
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    surface.approve(&id).unwrap();
    let done = surface
        .invoke_with(
            "view:test.probe.guarded",
            json!({"ids": ["c"]}),
            Call::default().confirmation(id),
        )
        .await;
    assert!(done.is_ok());
    let kinds: Vec<String> = surface
        .events()
        .iter()
        .map(|event| {
            format!("{event:?}")
                .split([' ', '{'])
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert!(
        kinds.contains(&"ComponentRegistered".to_owned()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"ConfirmationResolved".to_owned()),
        "{kinds:?}"
    );
    assert!(!surface.audit_log().is_empty());
    // Harness time is manual: timestamps are deterministic.
    surface.advance(Duration::from_secs(1));
    assert_eq!(
        surface.clock().now_ms(),
        agent_surface::testing::START_MS + 120_001 + 1_000
    );
}

#[tokio::test]
async fn as_test_001_semantic_snapshots_normalize_volatility() {
    let surface = TestSurface::new();
    let _a = registry_of(&surface).mount(Probe::new()).unwrap();
    let _b = registry_of(&surface)
        .mount_instance(Probe::new(), "second")
        .unwrap();
    let semantic = surface.semantic_snapshot();
    for key in ["surfaceId", "capturedAt", "surfaceVersion"] {
        assert!(semantic.get(key).is_none(), "{key}");
    }
    let ids: Vec<&str> = semantic["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["registrationId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["<reg#1>", "<reg#2>"]);
    // Schemas verbatim.
    assert_eq!(
        semantic["components"][0]["actions"][0]["inputSchema"],
        surface.snapshot().to_json()["components"][0]["actions"][0]["inputSchema"]
    );
    // Two registries with the same mounts give the same document.
    let other = TestSurface::new();
    let _c = registry_of(&other).mount(Probe::new()).unwrap();
    let _d = registry_of(&other)
        .mount_instance(Probe::new(), "second")
        .unwrap();
    assert_eq!(other.semantic_snapshot(), semantic);
    assert_eq!(
        surface.semantic_snapshot_with_version()["surfaceVersion"],
        "2"
    );
}
