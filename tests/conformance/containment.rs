//! Nothing a host or a policy supplies can panic through the registry
//! (AS-OBSV-001's records are still written): a policy hook that panics
//! before returning its future, the host context provider, the route
//! provider, the audit redaction hook (see `identity.rs`) and component
//! destructors (see `nesting.rs`) are contained; `Duration::MAX` as "no
//! timeout" saturates instead of overflowing.

use std::time::Duration;

use agent_surface::policy::{BoxFuture, InvokeContext, Next, Policy, PolicyContext, PolicyResult};
use agent_surface::prelude::*;
use agent_surface::registry::{Limits, Registry};
use serde_json::json;

use crate::fixtures::{Probe, code};

/// Panics synchronously in the chosen hook, before any future exists.
struct Eager {
    authorize: bool,
}

impl Policy for Eager {
    fn name(&self) -> &str {
        "eager"
    }
    fn on_authorize<'a>(
        &'a self,
        ctx: &'a PolicyContext<'a>,
        next: Next<'a, PolicyContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        if self.authorize {
            panic!("on_authorize panicked before returning its future");
        }
        let _ = ctx;
        next.run()
    }
    fn on_invoke<'a>(
        &'a self,
        ctx: &'a InvokeContext<'a>,
        next: Next<'a, InvokeContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        if !self.authorize {
            panic!("on_invoke panicked before returning its future");
        }
        let _ = ctx;
        next.run()
    }
}

fn poke() -> Invocation {
    Invocation::new("view:test.probe.poke").input(json!({"ids": ["a"]}))
}

#[tokio::test]
async fn as_policy_004_a_policy_panicking_synchronously_refuses_the_call() {
    for authorize in [true, false] {
        let registry = Registry::builder().policy(Eager { authorize }).build();
        let probe = Probe::new();
        let _mounted = registry.mount(probe.clone()).unwrap();
        let result = registry.invoke(poke(), InvokeOptions::default()).await;
        assert_eq!(
            code(&result),
            Some(ErrorCode::NotAuthorized),
            "authorize={authorize}: {result:?}"
        );
        assert_eq!(probe.runs(), 0);
        // The settled record is still written.
        assert!(
            registry
                .audit_log()
                .iter()
                .any(|e| e.kind == agent_surface::audit::AuditKind::InvocationSettled)
        );
    }
}

#[tokio::test]
async fn as_policy_004_a_panicking_host_context_provider_fails_closed() {
    let registry = Registry::builder()
        .host_context(|| panic!("the host context provider panicked"))
        .policy(agent_surface::policy::authenticated())
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let result = registry.invoke(poke(), InvokeOptions::default()).await;
    // As if nobody were signed in: `authenticated` hides the capability.
    assert_eq!(
        code(&result),
        Some(ErrorCode::CapabilityNotFound),
        "{result:?}"
    );
    assert_eq!(probe.runs(), 0);
    // Snapshots survive it too, showing what an anonymous host would see.
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert!(snapshot.components().is_empty());
}

#[test]
fn as_snap_001_a_panicking_route_provider_leaves_the_route_out() {
    let registry = Registry::builder()
        .route(|| panic!("the route provider panicked"))
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert!(snapshot.route().is_none());
    assert_eq!(snapshot.components().len(), 1);
}

#[tokio::test]
async fn duration_max_means_no_timeout_and_never_overflows() {
    let registry = Registry::builder()
        .limits(
            Limits::default()
                .action_timeout(Duration::MAX)
                .observation_timeout(Duration::MAX)
                .procedure_timeout(Duration::MAX)
                .confirmation_ttl(Duration::MAX)
                .dedupe_cache_ttl(Duration::MAX)
                .tombstone_ttl(Duration::MAX),
        )
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let result = registry
        .invoke(poke().invocation_id("max-1"), InvokeOptions::default())
        .await;
    assert!(result.is_ok(), "{result:?}");
    let read = registry
        .invoke(
            Invocation::new("view:test.probe.read"),
            InvokeOptions::default(),
        )
        .await;
    assert!(read.is_ok(), "{read:?}");
    let options = InvokeOptions::default().timeout(Duration::MAX);
    let result = registry.invoke(poke(), options).await;
    assert!(result.is_ok(), "{result:?}");
    // A confirmation with an unbounded time to live.
    let asked = registry
        .invoke(
            Invocation::new("view:test.probe.guarded").input(json!({"ids": ["z"]})),
            InvokeOptions::default(),
        )
        .await;
    assert_eq!(code(&asked), Some(ErrorCode::ConfirmationRequired));
}

/// Builds a value nested `depth` arrays deep, without recursion.
pub(crate) fn nested(depth: usize) -> serde_json::Value {
    let mut value = serde_json::Value::Null;
    for _ in 0..depth {
        value = serde_json::Value::Array(vec![value]);
    }
    value
}

/// Returns what the host hands it, however deep.
pub(crate) struct Echo;

/// An echo.
#[agent_component(type = "test.echo")]
impl Echo {
    /// Something nested far too deep.
    #[observation]
    fn deep(&self) -> serde_json::Value {
        nested(100_000)
    }

    /// Audited in full.
    #[action(effect = "local-state", audit = "full")]
    fn note(&self, input: crate::identity::Entry) -> crate::identity::Entry {
        input
    }
}

/// Runs `f` on a thread with a 2 MiB stack, as a small worker thread has.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .expect("no stack overflow")
}

#[test]
fn as_ser_001_a_handler_returning_a_value_too_deep_to_drop_settles_on_a_small_stack() {
    let code = on_small_stack(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let registry = Registry::builder().build();
            let _mounted = registry.mount(std::sync::Arc::new(Echo)).unwrap();
            let result = registry
                .invoke(
                    Invocation::new("view:test.echo.deep"),
                    InvokeOptions::default(),
                )
                .await;
            code(&result)
        })
    });
    assert_eq!(code, Some(ErrorCode::ExecutionFailed));
}

#[test]
fn as_obsv_001_a_redaction_hook_returning_a_value_too_deep_is_recorded_as_a_marker() {
    let payload = on_small_stack(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let registry = Registry::builder()
                .audit_redaction(|_| nested(100_000))
                .build();
            let _mounted = registry.mount(std::sync::Arc::new(Echo)).unwrap();
            let result = registry
                .invoke(
                    Invocation::new("view:test.echo.note").input(json!({"text": "x"})),
                    InvokeOptions::default(),
                )
                .await;
            assert!(result.is_ok(), "{result:?}");
            let log = registry.audit_log();
            let settled = log
                .iter()
                .rev()
                .find(|e| e.kind == agent_surface::audit::AuditKind::InvocationSettled)
                .unwrap();
            serde_json::to_string(&settled.payload).unwrap()
        })
    });
    assert!(payload.contains("too-deep"), "{payload}");
}

/// A host clock that panics once told to.
#[derive(Debug, Default)]
struct FlakyClock {
    broken: std::sync::atomic::AtomicBool,
}

impl agent_surface::clock::Clock for FlakyClock {
    fn now_ms(&self) -> u64 {
        if self.broken.load(std::sync::atomic::Ordering::Relaxed) {
            panic!("the host clock failed");
        }
        1_700_000_000_000
    }
}

#[tokio::test]
async fn a_panicking_host_clock_is_contained_and_time_holds_at_its_last_reading() {
    let clock = std::sync::Arc::new(FlakyClock::default());
    let registry = Registry::builder().clock(clock.clone()).build();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let registration = mounted.registration_id().to_owned();
    assert_eq!(registry.now_ms(), 1_700_000_000_000);
    clock
        .broken
        .store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(registry.now_ms(), 1_700_000_000_000);
    let result = registry.invoke(poke(), InvokeOptions::default()).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(probe.runs(), 1);
    // Unmounting reads the clock (the tombstone's age); a call with the old
    // registration id after it still answers, under the state lock too.
    drop(mounted);
    let stale = registry
        .invoke(poke().registration(registration), InvokeOptions::default())
        .await;
    assert_eq!(
        code(&stale),
        Some(ErrorCode::ComponentUnmounted),
        "{stale:?}"
    );
}
