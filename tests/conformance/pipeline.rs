//! The invocation pipeline: deduplication (AS-IDENT-*), staleness
//! (AS-STALE-*), availability (AS-AVAIL-*), input (AS-INVOKE-001/002),
//! execution and settlement (AS-SER-001, AS-CONC-011), bounds (AS-BOUND-*).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agent_surface::audit::AuditKind;
use agent_surface::clock::ManualClock;
use agent_surface::error::Retry;
use agent_surface::prelude::*;
use agent_surface::registry::{Limits, Registry};
use serde_json::json;

use crate::fixtures::{Probe, call, code, consumer, registry, settle_tasks};

fn poke(ids: &[&str]) -> Invocation {
    Invocation::new("view:test.probe.poke").input(json!({"ids": ids}))
}

#[tokio::test]
async fn as_ident_001_duplicate_call_joins_inflight_and_returns_cached_terminal() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let request = Invocation::new("view:test.probe.hold").invocation_id("call-1");
    let first = tokio::spawn({
        let (registry, request) = (registry.clone(), request.clone());
        async move { call(&registry, request).await }
    });
    let second = tokio::spawn({
        let (registry, request) = (registry.clone(), request.clone());
        async move { call(&registry, request).await }
    });
    settle_tasks().await;
    probe.open();
    let (first, second) = (first.await.unwrap(), second.await.unwrap());
    assert!(first.is_ok());
    assert_eq!(first, second, "both callers get the same result");
    assert_eq!(probe.runs(), 1, "the handler ran once");
    let third = call(&registry, request).await;
    assert_eq!(third, first, "the cached terminal result, verbatim");
    assert_eq!(probe.runs(), 1);
}

#[tokio::test]
async fn as_ident_002_same_id_different_input_fails_closed() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let original = call(&registry, poke(&["a"]).invocation_id("id-1")).await;
    assert!(original.is_ok());
    let conflict = call(&registry, poke(&["b"]).invocation_id("id-1")).await;
    let error = conflict.error().unwrap();
    assert_eq!(error.code(), ErrorCode::InvocationConflict);
    assert_eq!(error.retry(), Retry::WithChanges);
    assert_eq!(
        error.detail("reason"),
        Some(&json!("id-reused-with-different-request"))
    );
    assert_eq!(probe.runs(), 1);
    // The stored record is untouched.
    assert_eq!(
        call(&registry, poke(&["a"]).invocation_id("id-1")).await,
        original
    );
    // Key order of the input does not matter to the fingerprint.
    let a = Invocation::new("x").input(json!({"a": 1, "b": [1, 2]}));
    let b = Invocation::new("x").input(json!({"b": [1.0, 2], "a": 1}));
    assert_eq!(a.fingerprint(), b.fingerprint());
}

#[tokio::test]
async fn as_ident_003_same_id_different_capability_fails_closed() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    assert!(
        call(
            &registry,
            Invocation::new("view:test.probe.read").invocation_id("id-2")
        )
        .await
        .is_ok()
    );
    let conflict = call(
        &registry,
        Invocation::new("view:test.probe.gated").invocation_id("id-2"),
    )
    .await;
    assert_eq!(code(&conflict), Some(ErrorCode::InvocationConflict));
}

#[tokio::test]
async fn as_ident_004_different_consumers_may_reuse_a_tool_call_id() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    for who in ["alice", "bob"] {
        let result = registry
            .invoke(
                poke(&[who]).invocation_id("toolu_01"),
                InvokeOptions::consumer(consumer(who)),
            )
            .await;
        assert!(result.is_ok(), "{result:?}");
    }
    assert_eq!(probe.runs(), 2);
}

fn clocked(limits: Limits) -> (Registry, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at_ms(1_000_000));
    let registry = Registry::builder()
        .environment(Environment::Test)
        .clock(clock.clone())
        .limits(limits)
        .build();
    (registry, clock)
}

#[tokio::test]
async fn as_ident_005_an_expired_key_is_a_new_attempt() {
    let (registry, clock) = clocked(Limits::default());
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    assert!(
        call(&registry, poke(&["a"]).invocation_id("id-3"))
            .await
            .is_ok()
    );
    clock.advance(Duration::from_secs(599));
    assert!(
        call(&registry, poke(&["a"]).invocation_id("id-3"))
            .await
            .is_ok()
    );
    assert_eq!(probe.runs(), 1, "inside the window: cached");
    clock.advance(Duration::from_secs(601));
    assert!(
        call(&registry, poke(&["a"]).invocation_id("id-3"))
            .await
            .is_ok()
    );
    assert_eq!(probe.runs(), 2, "after the window: a new attempt");
}

#[tokio::test]
async fn as_bound_002_dedupe_evicts_least_recently_used_beyond_its_size() {
    let (registry, _clock) = clocked(Limits::default().dedupe_cache_size(3));
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    for id in ["k1", "k2", "k3"] {
        call(&registry, poke(&["a"]).invocation_id(id)).await;
    }
    call(&registry, poke(&["a"]).invocation_id("k1")).await; // k1 is now most recent
    call(&registry, poke(&["a"]).invocation_id("k4")).await; // evicts k2
    assert_eq!(probe.runs(), 4);
    call(&registry, poke(&["a"]).invocation_id("k1")).await;
    assert_eq!(probe.runs(), 4, "k1 survived");
    call(&registry, poke(&["a"]).invocation_id("k2")).await;
    assert_eq!(probe.runs(), 5, "k2 was evicted: a new attempt");
    assert!(registry.dedupe_len() <= 3);
}

#[tokio::test]
async fn as_bound_002_memory_stays_flat_over_many_distinct_ids() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    for n in 0..5_000 {
        call(
            &registry,
            Invocation::new("view:test.probe.read").invocation_id(format!("inv-{n}")),
        )
        .await;
    }
    assert!(registry.dedupe_len() <= registry.limits().dedupe_cache_size);
    assert!(registry.audit_log().len() <= registry.limits().audit_buffer);
}

#[tokio::test]
async fn as_bound_001_tombstones_decay_from_unmounted_to_not_found() {
    let (registry, clock) = clocked(Limits::default().tombstone_size(2));
    let first = registry.mount(Probe::new()).unwrap();
    let id = first.registration_id().to_owned();
    drop(first);
    let read = || Invocation::new("view:test.probe.read").registration(&id);
    assert_eq!(
        code(&call(&registry, read()).await),
        Some(ErrorCode::ComponentUnmounted)
    );
    assert_eq!(
        code(&call(&registry, Invocation::new("view:test.probe.read")).await),
        Some(ErrorCode::ComponentUnmounted)
    );
    clock.advance(Duration::from_secs(301));
    assert_eq!(
        code(&call(&registry, read()).await),
        Some(ErrorCode::CapabilityNotFound),
        "TTL expired"
    );
    // Size bound: the oldest tombstone is forgotten first.
    let ids: Vec<String> = (0..3)
        .map(|k| {
            registry
                .mount_instance(Probe::new(), &format!("t{k}"))
                .unwrap()
                .registration_id()
                .to_owned()
        })
        .collect();
    let stale = |id: &str| Invocation::new("view:test.probe.read").registration(id);
    assert_eq!(
        code(&call(&registry, stale(&ids[0])).await),
        Some(ErrorCode::CapabilityNotFound)
    );
    assert_eq!(
        code(&call(&registry, stale(&ids[2])).await),
        Some(ErrorCode::ComponentUnmounted)
    );
}

#[tokio::test]
async fn as_stale_001_staleness_matrix() {
    let registry = registry();
    let a = registry.mount_instance(Probe::new(), "a").unwrap();
    let b = registry.mount_instance(Probe::new(), "b").unwrap();
    // Several instances, none named: ambiguous, with the instances listed.
    let result = call(&registry, Invocation::new("view:test.probe.read")).await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::AmbiguousInstance);
    let instances = error.detail("instances").unwrap().as_array().unwrap();
    assert_eq!(instances.len(), 2);
    assert_eq!(instances[0]["instanceId"], json!("a"));
    assert_eq!(instances[0]["registrationId"], json!(a.registration_id()));
    assert!(
        call(
            &registry,
            Invocation::new("view:test.probe.read").instance("b")
        )
        .await
        .is_ok()
    );
    assert!(
        call(
            &registry,
            Invocation::new("view:test.probe.read").registration(b.registration_id())
        )
        .await
        .is_ok()
    );

    // Replaced: the token names an older registration of a live instance.
    let old_b = b.registration_id().to_owned();
    drop(b);
    let b2 = registry.mount_instance(Probe::new(), "b").unwrap();
    let result = call(
        &registry,
        Invocation::new("view:test.probe.read")
            .instance("b")
            .registration(&old_b),
    )
    .await;
    assert_eq!(
        result.error().unwrap().detail("reason"),
        Some(&json!("registration-replaced"))
    );
    assert_eq!(
        result.error().unwrap().detail("liveRegistrationId"),
        Some(&json!(b2.registration_id()))
    );

    // Tombstone: the instance is gone and nothing replaced it.
    let old_a = a.registration_id().to_owned();
    drop(a);
    let result = call(
        &registry,
        Invocation::new("view:test.probe.read")
            .instance("a")
            .registration(&old_a),
    )
    .await;
    assert_eq!(code(&result), Some(ErrorCode::ComponentUnmounted));
    assert_eq!(
        result.error().unwrap().detail("phase"),
        Some(&json!("resolve"))
    );

    // A token from another registry (the page reloaded).
    let other = Registry::builder().build();
    let foreign = other.mount(Probe::new()).unwrap();
    let result = call(
        &registry,
        Invocation::new("view:test.probe.read").registration(foreign.registration_id()),
    )
    .await;
    assert_eq!(result.error().unwrap().code(), ErrorCode::StaleCapability);
    assert_eq!(
        result.error().unwrap().detail("reason"),
        Some(&json!("surface-reloaded"))
    );

    // Never registered at all.
    let result = call(&registry, Invocation::new("view:test.nothing.here")).await;
    assert_eq!(result.error().unwrap(), &ErrorPayload::not_found());
}

#[tokio::test]
async fn as_avail_001_availability_is_recomputed_at_invocation() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert!(
        snapshot
            .capability("view:test.probe.gated")
            .unwrap()
            .1
            .available()
    );
    probe.on.store(false, Ordering::SeqCst); // state changed after discovery
    let result = call(
        &registry,
        Invocation::new("view:test.probe.gated")
            .registration(snapshot.components()[0].registration_id()),
    )
    .await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::CapabilityNotAvailable);
    let descriptor_reason = registry
        .snapshot(&SnapshotOptions::default())
        .capability("view:test.probe.gated")
        .unwrap()
        .1
        .unavailable_reason()
        .map(str::to_owned);
    assert_eq!(
        error.detail("reason").and_then(|r| r.as_str()),
        descriptor_reason.as_deref()
    );
    assert_eq!(probe.runs(), 0);
}

#[tokio::test]
async fn as_invoke_002_effective_input_is_validated_completely_before_the_handler() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let result = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": [], "extra": "s3cret"})),
    )
    .await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::InvalidInput);
    let issues = error.detail("issues").unwrap();
    assert_eq!(
        issues,
        &json!([
            {"path": "/extra", "message": "unknown property; allowed: ids"},
            {"path": "/ids", "message": "must have at least 1 item(s)"},
        ])
    );
    assert!(
        !serde_json::to_string(&result).unwrap().contains("s3cret"),
        "values are never echoed"
    );
    let wrong_type = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!("ids")),
    )
    .await;
    assert_eq!(code(&wrong_type), Some(ErrorCode::InvalidInput));
    let observation_input = call(
        &registry,
        Invocation::new("view:test.probe.read").input(json!({"x": 1})),
    )
    .await;
    assert_eq!(code(&observation_input), Some(ErrorCode::InvalidInput));
    // Integral floats are integers, as in JSON.
    let nap = call(
        &registry,
        Invocation::new("view:test.probe.nap").input(json!({"ms": 1.0})),
    )
    .await;
    assert!(nap.is_ok(), "{nap:?}");
    assert_eq!(probe.runs(), 1);
}

/// Every environment a registry can run in. Listing them through a `match`
/// makes a new variant a compile error here until the test covers it.
fn every_environment() -> [Environment; 3] {
    let all = [
        Environment::Development,
        Environment::Test,
        Environment::Production,
    ];
    for environment in all {
        match environment {
            Environment::Development | Environment::Test | Environment::Production => {}
        }
    }
    all
}

#[tokio::test]
async fn as_ser_001_non_json_and_oversized_outputs_fail_loudly_in_every_environment() {
    for environment in every_environment() {
        let registry = Registry::builder().environment(environment).build();
        let _mounted = registry.mount(Probe::new()).unwrap();
        let nan = call(&registry, Invocation::new("view:test.probe.nan")).await;
        let error = nan.error().unwrap();
        assert_eq!(error.code(), ErrorCode::ExecutionFailed, "{environment:?}");
        assert_eq!(
            error.detail("reason"),
            Some(&json!("output-invalid")),
            "{environment:?}"
        );
        let huge = call(&registry, Invocation::new("view:test.probe.huge")).await;
        let error = huge.error().unwrap();
        assert_eq!(error.code(), ErrorCode::ExecutionFailed, "{environment:?}");
        assert_eq!(
            error.detail("reason"),
            Some(&json!("output-too-large")),
            "{environment:?}"
        );
        // A defect of one call, never of the registry.
        assert!(
            call(&registry, poke(&["a"])).await.is_ok(),
            "{environment:?}"
        );
    }
}

#[tokio::test]
async fn handler_panics_and_errors_settle_execution_failed_and_keep_secrets() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let panicked = call(&registry, Invocation::new("view:test.probe.explode")).await;
    assert_eq!(
        panicked.error().unwrap().detail("reason"),
        Some(&json!("handler-error"))
    );
    let failed = call(&registry, Invocation::new("view:test.probe.fail")).await;
    let text = serde_json::to_string(&failed).unwrap();
    assert!(text.contains("EXECUTION_FAILED"));
    assert!(
        !text.contains("hunter2") && !text.contains("db-internal"),
        "{text}"
    );
    let operator = registry
        .audit_log()
        .into_iter()
        .filter_map(|event| event.detail)
        .filter_map(|detail| detail.get("operator").cloned())
        .map(|operator| operator.to_string())
        .collect::<Vec<_>>();
    assert!(
        operator.iter().any(|o| o.contains("hunter2")),
        "operators keep the cause"
    );
    assert!(operator.iter().any(|o| o.contains("the probe exploded")));
    // The registry is healthy after a panic.
    assert!(call(&registry, poke(&["a"])).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn as_conc_011_timeout_with_late_resolution_is_audited_and_never_overwrites() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let options = InvokeOptions::consumer(consumer("tester")).timeout(Duration::from_millis(100));
    let request = Invocation::new("view:test.probe.hold").invocation_id("slow-1");
    let result = registry.invoke(request.clone(), options.clone()).await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::Timeout);
    assert_eq!(
        error.retry(),
        Retry::No,
        "not idempotent: side effects unknown"
    );
    assert_eq!(error.detail("timeoutMs"), Some(&json!(100)));
    probe.open(); // the handler finishes late
    settle_tasks().await;
    assert_eq!(probe.runs(), 1);
    assert!(
        registry
            .audit_log()
            .iter()
            .any(|e| e.kind == AuditKind::LateSettlement),
        "the late settlement is audited"
    );
    assert_eq!(
        registry.invoke(request, options).await,
        result,
        "never overwritten"
    );
    // An idempotent capability's timeout may be retried.
    let nap = call(
        &registry,
        Invocation::new("view:test.probe.nap").input(json!({"ms": 5000})),
    )
    .await;
    assert_eq!(nap.error().unwrap().retry(), Retry::Yes);
}

#[tokio::test]
async fn as_invoke_001_authorization_runs_before_input_exists() {
    // By type: `PolicyContext` (phase 4) has no input accessor; only
    // `InvokeContext` (phase 6) carries the effective input. At runtime a
    // denying authorization wins over an invalid input.
    use agent_surface::policy::{BoxFuture, Next, Policy, PolicyContext, PolicyResult};
    struct Deny;
    impl Policy for Deny {
        fn name(&self) -> &str {
            "deny"
        }
        fn on_authorize<'a>(
            &'a self,
            _: &'a PolicyContext<'a>,
            _: Next<'a, PolicyContext<'a>>,
        ) -> BoxFuture<'a, PolicyResult> {
            Box::pin(std::future::ready(Err(ErrorPayload::not_authorized(
                agent_surface::error::Origin::Client,
            ))))
        }
    }
    let registry = Registry::builder().policy(Deny).build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let result = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"bad": true})),
    )
    .await;
    assert_eq!(code(&result), Some(ErrorCode::NotAuthorized));
}

/// An input whose hand-written field deserializer refuses a value its
/// schema allows (`"forbidden"`): the validator passes it, the typed parse
/// does not.
#[agent_schema]
#[derive(Clone, Debug)]
pub(crate) struct Picky {
    /// A code.
    #[serde(deserialize_with = "not_forbidden")]
    #[schemars(length(max = 32))]
    pub(crate) code: String,
}

fn not_forbidden<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let code = <String as serde::Deserialize>::deserialize(deserializer)?;
    if code == "forbidden" {
        return Err(serde::de::Error::custom("the value s3cret-forbidden"));
    }
    Ok(code)
}

/// Takes a [`Picky`].
pub(crate) struct PickyTaker;

/// Takes a picky input.
#[agent_component(type = "test.picky")]
impl PickyTaker {
    /// Takes it.
    #[action(effect = "local-state")]
    fn take(&self, input: Picky) {
        let _ = input.code;
    }
}

#[tokio::test]
async fn as_invoke_002_an_input_its_own_deserializer_refuses_is_invalid_input_without_serdes_message()
 {
    let registry = registry();
    let _mounted = registry.mount(Arc::new(PickyTaker)).unwrap();
    let fine = call(
        &registry,
        Invocation::new("view:test.picky.take").input(json!({"code": "ok"})),
    )
    .await;
    assert!(fine.error().is_none(), "{fine:?}");
    let refused = call(
        &registry,
        Invocation::new("view:test.picky.take").input(json!({"code": "forbidden"})),
    )
    .await;
    let error = refused.error().unwrap();
    assert_eq!(error.code(), ErrorCode::InvalidInput);
    // The input's own issue (the empty path): where inside it the
    // hand-written deserializer failed is not tracked.
    assert_eq!(
        error.detail("issues").unwrap(),
        &json!([{"path": "", "message": "does not match the expected type"}])
    );
    assert!(
        !serde_json::to_string(&refused).unwrap().contains("s3cret"),
        "serde's message (which may quote the value) is never shown"
    );
}
