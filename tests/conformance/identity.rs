//! At most once per invocation id under attack (AS-IDENT-001, -004, -005):
//! in-flight records are never evicted, other consumers' traffic cannot
//! evict a consumer's records within its fair share, keys are structured
//! (no two consumers' ids collide however they are spelled), and no host
//! hook can abandon a record.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_surface::prelude::*;
use agent_surface::registry::{Limits, Registry};
use serde_json::json;

use crate::fixtures::{Probe, code, consumer, settle_tasks};

async fn call_as(registry: &Registry, who: &str, invocation: Invocation) -> InvocationResult {
    registry
        .invoke(invocation, InvokeOptions::consumer(consumer(who)))
        .await
}

#[tokio::test]
async fn as_ident_001_other_consumers_traffic_never_evicts_an_in_flight_record() {
    let registry = Registry::builder()
        .limits(Limits::default().dedupe_cache_size(8))
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let held = tokio::spawn({
        let registry = registry.clone();
        async move {
            call_as(
                &registry,
                "victim",
                Invocation::new("view:test.probe.hold").invocation_id("call-1"),
            )
            .await
        }
    });
    settle_tasks().await;
    for n in 0..500 {
        let result = call_as(
            &registry,
            "noisy",
            Invocation::new("view:test.probe.read").invocation_id(format!("n-{n}")),
        )
        .await;
        assert!(result.is_ok());
    }
    // The victim's retry joins the running call instead of running again.
    let retry = tokio::spawn({
        let registry = registry.clone();
        async move {
            call_as(
                &registry,
                "victim",
                Invocation::new("view:test.probe.hold").invocation_id("call-1"),
            )
            .await
        }
    });
    settle_tasks().await;
    probe.open();
    let (first, second) = (held.await.unwrap(), retry.await.unwrap());
    assert!(first.is_ok() && second.is_ok(), "{first:?} {second:?}");
    assert_eq!(first, second);
    assert_eq!(probe.runs(), 1, "the handler ran once");
    assert!(registry.dedupe_len() <= 8 + 1, "{}", registry.dedupe_len());
}

#[tokio::test]
async fn as_ident_005_a_consumer_within_its_fair_share_keeps_its_settled_records() {
    let registry = Registry::builder()
        .limits(Limits::default().dedupe_cache_size(16))
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let poke = |id: &str| {
        Invocation::new("view:test.probe.poke")
            .input(json!({"ids": ["a"]}))
            .invocation_id(id)
    };
    assert!(call_as(&registry, "quiet", poke("mine")).await.is_ok());
    for n in 0..1_000 {
        let _ = call_as(&registry, "noisy", poke(&format!("n-{n}"))).await;
    }
    let runs = probe.runs();
    let again = call_as(&registry, "quiet", poke("mine")).await;
    assert!(again.is_ok());
    assert_eq!(
        probe.runs(),
        runs,
        "the cached result was returned, nothing ran"
    );
    assert!(registry.dedupe_len() <= 16);
}

#[tokio::test]
async fn as_ident_004_consumer_keys_are_structured_not_concatenated() {
    let registry = Registry::builder().build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    // "ann" + " " + "lee x" and "ann lee" + " " + "x" would be one string.
    let a = call_as(
        &registry,
        "ann",
        Invocation::new("view:test.probe.poke")
            .input(json!({"ids": ["a"]}))
            .invocation_id("lee x"),
    )
    .await;
    let b = call_as(
        &registry,
        "ann lee",
        Invocation::new("view:test.probe.poke")
            .input(json!({"ids": ["b"]}))
            .invocation_id("x"),
    )
    .await;
    assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    assert_eq!(probe.runs(), 2);
}

#[tokio::test]
async fn as_ident_001_in_flight_calls_are_capped_per_consumer() {
    let registry = Registry::builder()
        .limits(
            Limits::default()
                .max_in_flight_per_consumer(2)
                .action_queue_depth(8),
        )
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let mut held = Vec::new();
    for n in 0..2 {
        let registry = registry.clone();
        held.push(tokio::spawn(async move {
            call_as(
                &registry,
                "busy",
                Invocation::new("view:test.probe.hold").invocation_id(format!("h-{n}")),
            )
            .await
        }));
    }
    settle_tasks().await;
    let third = call_as(
        &registry,
        "busy",
        Invocation::new("view:test.probe.hold").invocation_id("h-3"),
    )
    .await;
    assert_eq!(code(&third), Some(ErrorCode::RateLimited));
    // Another consumer is not affected.
    let other = call_as(
        &registry,
        "calm",
        Invocation::new("view:test.probe.read").invocation_id("r-1"),
    )
    .await;
    assert!(other.is_ok());
    probe.open();
    for task in held {
        assert!(task.await.unwrap().is_ok());
    }
}

/// A component whose action's inputs and outputs are audited in full.
pub(crate) struct Ledger {
    runs: AtomicUsize,
}

/// Something to record.
#[agent_schema]
pub(crate) struct Entry {
    /// The text.
    #[agent_schema(unbounded)]
    pub(crate) text: String,
}

/// A ledger.
#[agent_component(type = "test.audited-ledger")]
impl Ledger {
    /// Records an entry; audited with its payload.
    #[action(effect = "local-state", audit = "full")]
    fn record(&self, input: Entry) -> Entry {
        self.runs.fetch_add(1, Ordering::SeqCst);
        input
    }
}

#[tokio::test]
async fn as_ident_001_a_panicking_redaction_hook_cannot_abandon_the_record() {
    let registry = Registry::builder()
        .audit_redaction(|_value| panic!("the redaction hook panicked"))
        .build();
    let ledger = Arc::new(Ledger {
        runs: AtomicUsize::new(0),
    });
    let _mounted = registry.mount(ledger.clone()).unwrap();
    let call = || {
        Invocation::new("view:test.audited-ledger.record")
            .input(json!({"text": "secret"}))
            .invocation_id("once")
    };
    let first = call_as(&registry, "a", call()).await;
    assert!(first.is_ok(), "{first:?}");
    let retry = call_as(&registry, "a", call()).await;
    assert_eq!(first, retry);
    assert_eq!(
        ledger.runs.load(Ordering::SeqCst),
        1,
        "the handler ran once"
    );
    // The audit record exists and carries nothing of the payload.
    let log = registry.audit_log();
    let settled = log
        .iter()
        .rev()
        .find(|e| e.kind == agent_surface::audit::AuditKind::InvocationSettled)
        .unwrap();
    let payload = serde_json::to_string(&settled.payload).unwrap();
    assert!(!payload.contains("secret"), "{payload}");
}

/// Calls `invocation` as consumer `c` with `options` applied.
async fn call_with(
    registry: &Registry,
    invocation: Invocation,
    options: impl FnOnce(InvokeOptions) -> InvokeOptions,
) -> InvocationResult {
    registry
        .invoke(invocation, options(InvokeOptions::consumer(consumer("c"))))
        .await
}

#[tokio::test]
async fn as_adapter_005_a_dedupe_replay_never_crosses_the_scope_floor() {
    let registry = Registry::builder().build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let poke = || Invocation::new("view:test.probe.poke").input(json!({"ids": ["d1"]}));
    let missing = || Invocation::new("view:test.absent.poke").input(json!({"ids": ["d1"]}));
    // Through the full reach: one poke, and a call to nothing.
    let wide = call_with(&registry, poke().invocation_id("X"), |o| o).await;
    assert!(wide.is_ok(), "{wide:?}");
    let nothing = call_with(&registry, missing().invocation_id("N"), |o| o).await;
    assert_eq!(code(&nothing), Some(ErrorCode::CapabilityNotFound));
    let narrow = |o: InvokeOptions| o.scope(["devices"]);
    // A fresh id through the floor: not found.
    let fresh = call_with(&registry, poke().invocation_id("Y"), narrow).await;
    assert_eq!(code(&fresh), Some(ErrorCode::CapabilityNotFound));
    // The wide call's id through the floor: a conflict, never its result —
    // the same answer as replaying the id of the call to nothing.
    let replay = call_with(&registry, poke().invocation_id("X"), narrow).await;
    let replay_nothing = call_with(&registry, missing().invocation_id("N"), narrow).await;
    assert_eq!(code(&replay), Some(ErrorCode::InvocationConflict));
    assert_eq!(code(&replay_nothing), code(&replay));
    assert_eq!(
        serde_json::to_value(replay.error()).unwrap(),
        serde_json::to_value(replay_nothing.error()).unwrap()
    );
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1);
    // The wide reach still gets its cached result, and nothing ran again.
    let again = call_with(&registry, poke().invocation_id("X"), |o| o).await;
    assert_eq!(again.output(), wide.output());
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn as_adapter_005_a_narrow_toolset_cannot_replay_a_wide_toolsets_call() {
    use agent_surface::toolset::{ACT, Mode, Toolset, Topology};
    let registry = Registry::builder().build();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let toolset = |scope: &[&str]| {
        Toolset::builder(&registry)
            .consumer(consumer("c"))
            .mode(Mode::Meta)
            .topology(Topology::Remote)
            .scope(scope.iter().map(|s| (*s).to_owned()))
            .build()
            .unwrap()
    };
    let (wide, narrow) = (toolset(&[]), toolset(&["devices"]));
    let act = json!({"capabilityId": "view:test.probe.poke", "input": {"ids": ["d1"]}});
    let first = wide.execute(ACT, act.clone(), Some("call_1")).await;
    assert!(first.is_ok(), "{first:?}");
    let mut replay = act;
    replay["invocationId"] = json!("call_1");
    replay["registrationId"] = json!(mounted.registration_id());
    let replayed = narrow.execute(ACT, replay, Some("call_2")).await;
    assert!(!replayed.is_ok(), "the floor was crossed: {replayed:?}");
    assert_eq!(
        replayed.error().map(ErrorPayload::code),
        Some(ErrorCode::InvocationConflict)
    );
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn as_ident_003_the_same_id_and_request_under_another_reach_conflicts() {
    use agent_surface::invoke::Kinds;
    let registry = Registry::builder().build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let poke = || Invocation::new("view:test.probe.poke").input(json!({"ids": ["d1"]}));
    // The verb: an action's result never comes back through the read verb.
    let acted = call_with(&registry, poke().invocation_id("K"), |o| {
        o.kinds(Kinds::Operations)
    })
    .await;
    assert!(acted.is_ok(), "{acted:?}");
    let read = call_with(&registry, poke().invocation_id("K"), |o| {
        o.kinds(Kinds::Observations)
    })
    .await;
    assert_eq!(code(&read), Some(ErrorCode::InvocationConflict));
    // The same reach is a retry: the cached result.
    let retried = call_with(&registry, poke().invocation_id("K"), |o| {
        o.kinds(Kinds::Operations)
    })
    .await;
    assert_eq!(retried.output(), acted.output());
    // Grants: the same consumer key with fewer grants does not take the
    // result of a call made with more.
    let granted = registry
        .invoke(
            poke().invocation_id("G"),
            InvokeOptions::consumer(consumer("c").with_grants(["admin"])),
        )
        .await;
    assert!(granted.is_ok(), "{granted:?}");
    let ungranted = call_with(&registry, poke().invocation_id("G"), |o| o).await;
    assert_eq!(code(&ungranted), Some(ErrorCode::InvocationConflict));
    assert_eq!(probe.runs.load(Ordering::SeqCst), 2);
}

/// A text to echo.
#[agent_schema]
pub(crate) struct Text {
    /// The text.
    #[schemars(length(max = 64))]
    pub(crate) t: String,
}

/// What `text` echoed, and how many times it ran.
#[agent_schema(output)]
pub(crate) struct Echoed {
    /// The text it was given.
    pub(crate) echo: String,
    /// Its runs so far.
    pub(crate) runs: u64,
}

/// An action that is not idempotent: every run counts.
#[derive(Default)]
pub(crate) struct Atk {
    runs: AtomicUsize,
}

/// A probe an attacker writes inputs for.
#[agent_component(type = "atk.probe")]
impl Atk {
    /// Echoes the text, counting its runs.
    #[action(effect = "local-state")]
    fn text(&self, input: Text) -> Echoed {
        let runs = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        Echoed {
            echo: input.t,
            runs: runs as u64,
        }
    }
}

#[tokio::test]
async fn as_ident_002_an_input_chosen_to_share_the_fnv_fingerprint_still_conflicts() {
    let registry = Registry::builder().build();
    let atk = Arc::new(Atk::default());
    let _mounted = registry.mount(Arc::clone(&atk)).unwrap();
    // Two inputs found (by a search over FNV-1a) to give one specification
    // fingerprint: FNV-1a can be steered by whoever writes the input.
    let first = Invocation::new("view:atk.probe.text")
        .input(json!({"t": "sT-694pJLIM"}))
        .invocation_id("same-id");
    let second = Invocation::new("view:atk.probe.text")
        .input(json!({"t": "L--3A7HtE0G"}))
        .invocation_id("same-id");
    assert_eq!(
        first.fingerprint(),
        second.fingerprint(),
        "the pair collides"
    );
    let ran = call_as(&registry, "agent", first).await;
    assert!(ran.is_ok(), "{ran:?}");
    let reused = call_as(&registry, "agent", second).await;
    assert_eq!(
        code(&reused),
        Some(ErrorCode::InvocationConflict),
        "{reused:?}"
    );
    assert_eq!(atk.runs.load(Ordering::SeqCst), 1, "the handler ran once");
}
