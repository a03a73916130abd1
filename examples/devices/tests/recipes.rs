//! Every recipe of the testing harness, on the devices surface, through
//! `agent_surface::testing::TestSurface` — plus the scripted scenario
//! (AS-EXAMPLE-001) and a committed semantic snapshot of what each demo
//! user can see.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)] // test code

use std::sync::Arc;
use std::time::Duration;

use agent_surface::audit::AuditKind;
use agent_surface::events::SurfaceEvent;
use agent_surface::prelude::*;
use agent_surface::registry::{Limits, RegistrationStatus};
use agent_surface::testing::{Call, TestSurface};
use devices::components::{Filters, StatusFilter, TableState};
use devices::{App, DevicesTable, Status, User, host_for, registry_builder, scenario};
use serde_json::{Value, json};

const DISABLE: &str = "domain:devices.disable";
const SELECT: &str = "view:devices.table.selectRows";

/// The devices app for `user`, under the harness.
async fn harness(user: User) -> (TestSurface, App) {
    harness_with(user, Limits::default()).await
}

async fn harness_with(user: User, limits: Limits) -> (TestSurface, App) {
    let surface = TestSurface::with(registry_builder().limits(limits));
    surface.as_host(host_for(&user));
    let app = App::attach(surface.registry().clone(), user).await.unwrap();
    (surface, app)
}

async fn select_offline_in_milan(surface: &TestSurface) -> Vec<String> {
    let set = surface
        .invoke(
            "view:devices.filters.set",
            json!({"status": "offline", "city": "Milan"}),
        )
        .await;
    assert!(set.is_ok(), "{set:?}");
    let state: TableState = surface
        .observe("view:devices.table.readState")
        .await
        .unwrap();
    let ids: Vec<String> = state.visible_rows.iter().map(|d| d.id.clone()).collect();
    assert!(surface.invoke(SELECT, json!({"ids": ids})).await.is_ok());
    ids
}

fn confirmation_of(result: &InvocationResult) -> String {
    let error = result.error().expect("an error");
    assert_eq!(error.code(), ErrorCode::ConfirmationRequired, "{error:?}");
    error
        .detail("confirmationId")
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

fn with_evidence(id: &str) -> Call {
    Call::default().confirmation(id.to_owned())
}

// ---------------------------------------------------------------------------
// The scenario

#[tokio::test]
async fn as_example_001_the_scripted_scenario_runs_end_to_end_without_a_model() {
    let app = App::start(User::admin()).await.unwrap();
    let mut transcript = Vec::new();
    let outcome = scenario::run(&app, &mut transcript).await;
    let text = String::from_utf8(transcript).unwrap();
    assert_eq!(outcome.selected, ["d2", "d3", "d4"], "{text}");
    assert_eq!(outcome.disabled, 3, "{text}");
    assert!(
        outcome.statuses_after.iter().all(|(_, s)| s == "disabled"),
        "{text}"
    );
    assert!(outcome.replay_refused, "{text}");
    for id in ["d2", "d3", "d4"] {
        assert_eq!(app.backend().get(id).unwrap().status, Status::Disabled);
    }
    // The transcript shows each protocol step, wire names from the catalog.
    for expected in [
        "1. discover",
        "view_devices__filters__set {\"city\":\"Milan\",\"status\":\"offline\"}",
        "CONFIRMATION_REQUIRED (retry: with-confirmation)",
        "the host asks the user",
        "the user approves",
        "ok {\"disabled\":3}",
        "view_devices__filters__set {\"status\":\"all\"}",
        "replaying confirmationId",
        "CAPABILITY_NOT_AVAILABLE",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    app.stop().await;

    // The viewer is never offered the procedure.
    let viewer = App::start(User::viewer()).await.unwrap();
    let mut transcript = Vec::new();
    let outcome = scenario::run(&viewer, &mut transcript).await;
    assert!(!outcome.disable_offered);
    assert_eq!(outcome.disabled, 0);
    assert!(viewer.server().received().is_empty());
    viewer.stop().await;
}

// ---------------------------------------------------------------------------
// Recipes

#[tokio::test]
async fn discovery_matches_the_committed_snapshot_of_each_demo_user() {
    for (user, name) in [(User::admin(), "admin"), (User::viewer(), "viewer")] {
        let (surface, app) = harness(user).await;
        insta::assert_json_snapshot!(format!("surface_{name}"), surface.semantic_snapshot());
        app.stop().await;
    }
}

#[tokio::test]
async fn invoke_and_observe_round_trip() {
    let (surface, app) = harness(User::admin()).await;
    let set = surface
        .invoke("view:devices.filters.set", json!({"status": "online"}))
        .await;
    assert!(set.is_ok());
    let filters: Filters = surface.observe("view:devices.filters.read").await.unwrap();
    assert_eq!(filters.status, StatusFilter::Online);
    assert_eq!(filters.city, None);
    // `city: null` clears, an omitted field is kept.
    surface
        .invoke("view:devices.filters.set", json!({"city": "Rome"}))
        .await;
    let filters: Filters = surface.observe("view:devices.filters.read").await.unwrap();
    assert_eq!(
        (filters.status, filters.city.as_deref()),
        (StatusFilter::Online, Some("Rome"))
    );
    app.stop().await;
}

#[tokio::test]
async fn navigation_unmounts_and_remounts_the_page_with_precise_staleness() {
    let (surface, app) = harness(User::admin()).await;
    let captured = surface.capture_ref(SELECT).unwrap();
    // Navigation settles on its own outcome even though it unmounts a page.
    let left = surface
        .invoke("view:app.navigation.goTo", json!({"route": "/settings"}))
        .await;
    assert_eq!(left.output(), Some(&json!({"route": "/settings"})));
    assert!(left.surface_changed());
    surface.assert_not_exposed(SELECT);
    surface.assert_exposed("view:app.navigation.current");
    let old = Call::default().registration(captured.registration_id.clone());
    let gone = surface
        .invoke_with(SELECT, json!({"ids": ["d1"]}), old.clone())
        .await;
    assert_eq!(gone.error().unwrap().code(), ErrorCode::ComponentUnmounted);
    // Back: a new registration; the old token is stale.
    surface
        .invoke("view:app.navigation.goTo", json!({"route": "/devices"}))
        .await;
    let stale = surface
        .invoke_with(SELECT, json!({"ids": ["d1"]}), old)
        .await;
    let error = stale.error().unwrap();
    assert_eq!(error.code(), ErrorCode::StaleCapability);
    assert_eq!(
        error.detail("reason"),
        Some(&json!("registration-replaced"))
    );
    assert_ne!(
        error.detail("liveRegistrationId"),
        Some(&json!(captured.registration_id))
    );
    app.stop().await;
}

#[tokio::test]
async fn hidden_and_disabled_depend_on_the_host_context() {
    let (surface, app) = harness(User::admin()).await;
    surface.assert_unavailable(DISABLE, Some("Select at least one device first"));
    surface.assert_unavailable(
        "view:devices.drawer.close",
        Some("The drawer is already closed"),
    );
    select_offline_in_milan(&surface).await;
    surface.assert_exposed(DISABLE);
    // The same app, now as the viewer: hidden, not merely disabled.
    surface.as_host(host_for(&User::viewer()));
    surface.assert_not_exposed(DISABLE);
    let hidden = surface.invoke(DISABLE, json!({})).await;
    assert_eq!(
        hidden.error().unwrap().code(),
        ErrorCode::CapabilityNotFound
    );
    // Signed out: every domain reference needs a user.
    surface.as_host(HostContext::new());
    surface.assert_not_exposed(DISABLE);
    app.stop().await;
}

#[tokio::test]
async fn confirmation_approve_deny_expire_and_replay() {
    let (surface, app) = harness(User::admin()).await;
    let ids = select_offline_in_milan(&surface).await;
    // Deny.
    let asked = surface.invoke(DISABLE, json!({"reason": "deny me"})).await;
    let denied = confirmation_of(&asked);
    assert_eq!(
        surface.pending()[0].input,
        json!({"deviceIds": ids, "reason": "deny me"})
    );
    surface.deny(&denied).unwrap();
    let after_deny = surface
        .invoke_with(
            DISABLE,
            json!({"reason": "deny me"}),
            with_evidence(&denied),
        )
        .await;
    assert_eq!(
        after_deny.error().unwrap().detail("reason"),
        Some(&json!("denied"))
    );
    // Expire (the harness clock, no waiting).
    let asked = surface.invoke(DISABLE, json!({"reason": "too slow"})).await;
    let expired = confirmation_of(&asked);
    surface.expire(&expired);
    let late = surface
        .invoke_with(
            DISABLE,
            json!({"reason": "too slow"}),
            with_evidence(&expired),
        )
        .await;
    assert_eq!(
        late.error().unwrap().detail("reason"),
        Some(&json!("expired"))
    );
    assert!(app.server().received().is_empty());
    // Approve, then replay.
    let asked = surface.invoke(DISABLE, json!({})).await;
    let approved = confirmation_of(&asked);
    surface.approve(&approved).unwrap();
    let done = surface
        .invoke_with(DISABLE, json!({}), with_evidence(&approved))
        .await;
    assert_eq!(done.output(), Some(&json!({"disabled": 3})));
    // Disabled, they left the offline view and the selection: select them
    // again under every status, so the replay asks for the same input.
    let all = surface
        .invoke("view:devices.filters.set", json!({"status": "all"}))
        .await;
    assert!(all.is_ok(), "{all:?}");
    let ids = ["d2", "d3", "d4"];
    assert!(surface.invoke(SELECT, json!({"ids": ids})).await.is_ok());
    let replay = surface
        .invoke_with(DISABLE, json!({}), with_evidence(&approved))
        .await;
    assert_eq!(
        replay.error().unwrap().detail("reason"),
        Some(&json!("consumed"))
    );
    assert_eq!(app.server().received().len(), 1);
    let kinds: Vec<AuditKind> = surface.audit_log().iter().map(|e| e.kind).collect();
    for kind in [
        AuditKind::ConfirmationRequested,
        AuditKind::ConfirmationDenied,
        AuditKind::ConfirmationExpired,
        AuditKind::ConfirmationApproved,
        AuditKind::ConfirmationConsumed,
    ] {
        assert!(kinds.contains(&kind), "{kind:?}");
    }
    app.stop().await;
}

#[tokio::test]
async fn bait_and_switch_a_selection_changed_after_approval_is_a_mismatch() {
    let (surface, app) = harness(User::admin()).await;
    select_offline_in_milan(&surface).await;
    let asked = surface.invoke(DISABLE, json!({})).await;
    let id = confirmation_of(&asked);
    surface.approve(&id).unwrap();
    // The user approved d2–d4; the selection now includes an online device.
    surface
        .invoke("view:devices.filters.set", json!({"status": "all"}))
        .await;
    surface
        .invoke(SELECT, json!({"ids": ["d1"], "mode": "add"}))
        .await;
    let retried = surface
        .invoke_with(DISABLE, json!({}), with_evidence(&id))
        .await;
    let error = retried.error().unwrap();
    assert_eq!(error.code(), ErrorCode::ConfirmationInvalid);
    assert_eq!(error.detail("reason"), Some(&json!("mismatch")));
    assert!(
        app.server().received().is_empty(),
        "the backend was never called"
    );
    assert_eq!(app.backend().get("d1").unwrap().status, Status::Online);
    app.stop().await;
}

#[tokio::test]
async fn a_locked_binding_cannot_be_overridden() {
    let (surface, app) = harness(User::admin()).await;
    select_offline_in_milan(&surface).await;
    let result = surface.invoke(DISABLE, json!({"deviceIds": ["d1"]})).await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::InvalidInput);
    assert_eq!(error.detail("lockedFields"), Some(&json!(["deviceIds"])));
    assert!(surface.pending().is_empty());
    app.stop().await;
}

#[tokio::test]
async fn a_second_table_under_the_same_instance_is_rejected() {
    let (surface, app) = harness(User::admin()).await;
    let duplicate = surface
        .registry()
        .mount(Arc::new(DevicesTable(Arc::clone(app.console()))))
        .unwrap();
    assert_eq!(duplicate.status(), RegistrationStatus::Rejected);
    assert!(surface.events().iter().any(|event| matches!(
        event,
        SurfaceEvent::ComponentRejected { component_type, reason: "duplicate", .. }
            if &**component_type == "devices.table"
    )));
    // The first one still answers.
    surface.assert_exposed(SELECT);
    app.stop().await;
}

#[tokio::test]
async fn dedupe_joins_and_conflicts() {
    let (surface, app) = harness(User::admin()).await;
    let call = |id: &str| Call::default().invocation_id(id.to_owned());
    let set = json!({"status": "offline"});
    let (a, b) = tokio::join!(
        surface.invoke_with("view:devices.filters.set", set.clone(), call("same")),
        surface.invoke_with("view:devices.filters.set", set.clone(), call("same")),
    );
    assert_eq!(a, b);
    let settled = surface
        .audit_log()
        .iter()
        .filter(|e| {
            e.kind == AuditKind::InvocationSettled && e.invocation_id.as_deref() == Some("same")
        })
        .count();
    assert_eq!(settled, 1, "the handler ran once");
    let conflict = surface
        .invoke_with(
            "view:devices.filters.set",
            json!({"status": "online"}),
            call("same"),
        )
        .await;
    assert_eq!(
        conflict.error().unwrap().code(),
        ErrorCode::InvocationConflict
    );
    app.stop().await;
}

#[tokio::test]
async fn the_reference_queue_overflows_while_views_and_observations_keep_running() {
    let (surface, app) = harness(User::admin()).await;
    select_offline_in_milan(&surface).await;
    // Four approved calls (distinct inputs, distinct confirmations).
    let mut approved = Vec::new();
    for n in 0..4 {
        let input = json!({"reason": format!("r{n}")});
        let id = confirmation_of(&surface.invoke(DISABLE, input.clone()).await);
        surface.approve(&id).unwrap();
        approved.push((input, id));
    }
    app.server().hold();
    let surface = Arc::new(surface);
    let mut running = Vec::new();
    for (input, id) in approved.iter().take(3).cloned() {
        let surface = Arc::clone(&surface);
        running.push(tokio::spawn(async move {
            surface
                .invoke_with(DISABLE, input, with_evidence(&id))
                .await
        }));
    }
    // The first call reaches the held backend; the next two wait in the
    // reference's queue (one running + two waiting).
    app.server().arrived(1).await;
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert_eq!(app.server().received().len(), 1);
    let (input, id) = approved[3].clone();
    let overflow = surface
        .invoke_with(DISABLE, input, with_evidence(&id))
        .await;
    let error = overflow.error().unwrap();
    assert_eq!(error.code(), ErrorCode::RateLimited);
    assert_eq!(error.detail("reason"), Some(&json!("queue-full")));
    // The table's own actions and observations are not behind the backend.
    assert!(
        surface
            .invoke(
                "view:devices.table.sort",
                json!({"by": "city", "dir": "desc"})
            )
            .await
            .is_ok()
    );
    let _: TableState = surface
        .observe("view:devices.table.readState")
        .await
        .unwrap();
    app.server().release();
    for call in running {
        assert!(call.await.unwrap().is_ok());
    }
    app.stop().await;
}

#[tokio::test]
async fn a_backend_call_past_its_timeout_settles_and_the_late_answer_is_audited() {
    let limits = Limits::default().procedure_timeout(Duration::from_millis(200));
    let (surface, app) = harness_with(User::admin(), limits).await;
    select_offline_in_milan(&surface).await;
    let id = confirmation_of(&surface.invoke(DISABLE, json!({})).await);
    surface.approve(&id).unwrap();
    app.server().hold();
    let result = surface
        .invoke_with(DISABLE, json!({}), with_evidence(&id))
        .await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::Timeout);
    assert_eq!(error.detail("timeoutMs"), Some(&json!(200)));
    assert_eq!(
        error.retry(),
        agent_surface::Retry::No,
        "disable is not idempotent"
    );
    // The executor was cancelled; its late settlement is on record.
    for _ in 0..100 {
        if surface
            .audit_log()
            .iter()
            .any(|e| e.kind == AuditKind::LateSettlement)
        {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(
        surface
            .audit_log()
            .iter()
            .any(|e| e.kind == AuditKind::LateSettlement)
    );
    app.server().release();
    app.stop().await;
}

#[tokio::test]
async fn observations_are_pure() {
    let (surface, app) = harness(User::admin()).await;
    select_offline_in_milan(&surface).await;
    let before = surface.registry().version();
    for id in [
        "view:devices.filters.read",
        "view:devices.table.readState",
        "view:devices.drawer.state",
        "view:app.navigation.current",
    ] {
        // `observe` fails if the surface version moves during the read.
        let value: Value = surface.observe(id).await.unwrap();
        assert!(!value.is_null(), "{id}");
    }
    assert_eq!(surface.registry().version(), before);
    app.stop().await;
}

#[tokio::test]
async fn filters_left_out_stay_as_they_are_and_null_clears_the_city() {
    let (surface, _app) = harness(User::viewer()).await;
    let filters = |value: Value| serde_json::from_value::<Filters>(value).unwrap();
    let set = surface
        .invoke(
            "view:devices.filters.set",
            json!({"status": "offline", "city": "Milan"}),
        )
        .await;
    assert!(set.is_ok(), "{set:?}");
    // Only the status: the city stays Milan.
    let set = surface
        .invoke("view:devices.filters.set", json!({"status": "online"}))
        .await;
    assert_eq!(
        filters(set.output().cloned().unwrap()),
        Filters {
            status: StatusFilter::Online,
            city: Some("Milan".to_owned()),
        }
    );
    // An explicit null clears it.
    let set = surface
        .invoke("view:devices.filters.set", json!({"city": null}))
        .await;
    assert_eq!(
        filters(set.output().cloned().unwrap()),
        Filters {
            status: StatusFilter::Online,
            city: None,
        }
    );
}
