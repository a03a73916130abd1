//! The audit trail of an invocation (AS-EVT-001's "started strictly before
//! settled", as operators see it): an `invocation-started` record once per
//! call that reaches execution, before the handler or the executor runs.

use std::sync::Arc;

use agent_surface::audit::{AuditEvent, AuditKind};
use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use serde_json::json;

use crate::fixtures::{Probe, call, code, registry, settle_tasks};
use crate::procedures::{ExportReport, FakeBackend, Screen, registry_with};

/// The audit records of one invocation, in order.
fn trail(registry: &Registry, invocation_id: &str) -> Vec<AuditEvent> {
    registry
        .audit_log()
        .into_iter()
        .filter(|event| event.invocation_id.as_deref() == Some(invocation_id))
        .collect()
}

fn kinds(events: &[AuditEvent]) -> Vec<AuditKind> {
    events.iter().map(|event| event.kind).collect()
}

/// A component whose actions choose their audit level.
struct Quiet;

/// Actions audited at different levels.
#[agent_component(type = "test.quiet")]
impl Quiet {
    /// Never audited.
    #[action(effect = "local-state", audit = "none")]
    fn hush(&self) {}

    /// Audited with payloads.
    #[action(effect = "local-state", audit = "full")]
    fn shout(&self) {}
}

#[tokio::test]
async fn as_evt_001_invocation_started_is_audited_once_before_settled() {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let ok = call(
        &registry,
        Invocation::new("view:test.probe.poke")
            .input(json!({"ids": ["a"]}))
            .invocation_id("poke-1"),
    )
    .await;
    assert!(ok.is_ok());
    let events = trail(&registry, "poke-1");
    assert_eq!(
        kinds(&events),
        [AuditKind::InvocationStarted, AuditKind::InvocationSettled]
    );
    let started = &events[0];
    assert_eq!(
        started.capability_id.as_deref(),
        Some("view:test.probe.poke")
    );
    assert_eq!(
        started.registration_id.as_deref(),
        Some(mounted.registration_id())
    );
    assert_eq!(started.consumer_id.as_deref(), Some("test:tester"));
    assert!(started.at_ms <= events[1].at_ms);
    // Identity only: no status, no payload, no timing of its own.
    assert_eq!(
        (started.status, started.code, started.duration_ms),
        (None, None, None)
    );
    assert!(started.payload.is_none());

    // A handler that fails still started.
    let _ = call(
        &registry,
        Invocation::new("view:test.probe.explode").invocation_id("boom-1"),
    )
    .await;
    assert_eq!(
        kinds(&trail(&registry, "boom-1")),
        [AuditKind::InvocationStarted, AuditKind::InvocationSettled]
    );

    // Refused before execution (phase 5): settled, never started.
    let refused = call(
        &registry,
        Invocation::new("view:test.probe.poke")
            .input(json!({"ids": []}))
            .invocation_id("poke-2"),
    )
    .await;
    assert_eq!(code(&refused), Some(ErrorCode::InvalidInput));
    assert_eq!(
        kinds(&trail(&registry, "poke-2")),
        [AuditKind::InvocationSettled]
    );
    assert_eq!(probe.runs(), 1);
}

#[tokio::test(start_paused = true)]
async fn as_evt_001_joined_and_cached_calls_start_once() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let request = Invocation::new("view:test.probe.hold").invocation_id("held-1");
    let first = tokio::spawn({
        let (registry, request) = (registry.clone(), request.clone());
        async move { call(&registry, request).await }
    });
    settle_tasks().await;
    // Running: started is on record, settled is not yet.
    assert_eq!(
        kinds(&trail(&registry, "held-1")),
        [AuditKind::InvocationStarted]
    );
    let joined = tokio::spawn({
        let (registry, request) = (registry.clone(), request.clone());
        async move { call(&registry, request).await }
    });
    settle_tasks().await;
    probe.open();
    assert!(first.await.unwrap().is_ok());
    assert!(joined.await.unwrap().is_ok());
    let cached = call(&registry, request).await;
    assert!(cached.is_ok());
    assert_eq!(
        kinds(&trail(&registry, "held-1")),
        [AuditKind::InvocationStarted, AuditKind::InvocationSettled],
        "one execution, one start"
    );
}

#[tokio::test(start_paused = true)]
async fn as_evt_001_an_interrupted_handler_started_before_it_timed_out() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let result = call(
        &registry,
        Invocation::new("view:test.probe.nap")
            .input(json!({"ms": 5_000}))
            .invocation_id("nap-1"),
    )
    .await;
    assert_eq!(code(&result), Some(ErrorCode::Timeout));
    let events = trail(&registry, "nap-1");
    assert_eq!(
        kinds(&events),
        [AuditKind::InvocationStarted, AuditKind::InvocationSettled]
    );
    assert_eq!(events[1].code, Some(ErrorCode::Timeout));
}

#[tokio::test]
async fn as_evt_001_forwarded_procedures_start_before_the_executor_runs() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let mounted = registry
        .mounting(Arc::clone(&screen))
        .procedure(ProcedureRef::<ExportReport>::new())
        .mount()
        .unwrap();
    let result = call(
        &registry,
        Invocation::new("domain:test.reports.export")
            .input(json!({"reportId": "r1", "format": "csv"}))
            .invocation_id("export-1"),
    )
    .await;
    assert!(result.is_ok(), "{result:?}");
    let events = trail(&registry, "export-1");
    assert_eq!(
        kinds(&events),
        [AuditKind::InvocationStarted, AuditKind::InvocationSettled]
    );
    assert_eq!(
        events[0].capability_id.as_deref(),
        Some("domain:test.reports.export")
    );
    assert_eq!(
        events[0].registration_id.as_deref(),
        Some(mounted.registration_id())
    );
    assert_eq!(backend.inputs().len(), 1);
}

#[tokio::test]
async fn as_evt_001_started_follows_the_audit_level() {
    let registry = registry();
    let _mounted = registry.mount(Arc::new(Quiet)).unwrap();
    let hush = call(
        &registry,
        Invocation::new("view:test.quiet.hush").invocation_id("hush-1"),
    )
    .await;
    assert!(hush.is_ok());
    assert!(trail(&registry, "hush-1").is_empty(), "audit = none");
    let shout = call(
        &registry,
        Invocation::new("view:test.quiet.shout").invocation_id("shout-1"),
    )
    .await;
    assert!(shout.is_ok());
    let events = trail(&registry, "shout-1");
    assert_eq!(
        kinds(&events),
        [AuditKind::InvocationStarted, AuditKind::InvocationSettled]
    );
    assert!(events[0].payload.is_none(), "payloads belong to settlement");
    assert!(events[1].payload.is_some());
}

#[tokio::test]
async fn as_evt_001_a_call_its_verb_does_not_admit_settles_audited_as_unresolved() {
    // A read-only verb naming an action is refused before the call counts
    // as resolved: its settlement is recorded at metadata level, without
    // the registration, whatever the action's own audit level.
    let registry = registry();
    let _mounted = registry.mount(Arc::new(Quiet)).unwrap();
    let options = InvokeOptions::consumer(crate::fixtures::consumer("tester"))
        .kinds(agent_surface::invoke::Kinds::Observations);
    let refused = registry
        .invoke(
            Invocation::new("view:test.quiet.hush").invocation_id("hush-2"),
            options,
        )
        .await;
    assert_eq!(code(&refused), Some(ErrorCode::InvalidInput));
    let events = trail(&registry, "hush-2");
    assert_eq!(kinds(&events), [AuditKind::InvocationSettled]);
    assert_eq!(events[0].registration_id, None);
    assert_eq!(
        events[0].capability_id.as_deref(),
        Some("view:test.quiet.hush")
    );
}
