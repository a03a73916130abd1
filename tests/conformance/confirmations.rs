//! Confirmations: AS-CONFIRM-001, -003..006, AS-IDENT-006.

use crate::fixtures::AnswerById;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::confirmation::ConfirmationOutcome;
use agent_surface::error::Retry;
use agent_surface::events::SurfaceEvent;
use agent_surface::prelude::*;
use agent_surface::registry::{Limits, Registry};
use serde_json::json;

use crate::fixtures::{Probe, call, code, confirmation_id, consumer, registry, settle_tasks};

fn guarded(ids: &[&str]) -> Invocation {
    Invocation::new("view:test.probe.guarded").input(json!({"ids": ids}))
}

#[tokio::test]
async fn as_confirm_001_approval_binds_to_the_exact_effective_input() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let asked = call(&registry, guarded(&["d1", "d2"]).invocation_id("c-1")).await;
    let id = confirmation_id(&asked);
    let details = asked.error().unwrap().details().unwrap();
    for key in ["confirmationId", "summary", "expiresAt", "effect", "origin"] {
        assert!(details.contains_key(key), "{key}");
    }
    assert_eq!(details["origin"], json!("client"));
    let pending = registry.confirmations().pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0].input,
        json!({"ids": ["d1", "d2"]}),
        "the exact effective input"
    );
    assert!(pending[0].summary.contains("d1"));
    registry.confirmations().approve_id(&id).unwrap();
    // Bait and switch: different input after approval.
    let switched = call(&registry, guarded(&["d1", "d2", "d3"]).confirmation(&id)).await;
    let error = switched.error().unwrap();
    assert_eq!(error.code(), ErrorCode::ConfirmationInvalid);
    assert_eq!(error.detail("reason"), Some(&json!("mismatch")));
    assert_eq!(error.retry(), Retry::No);
    assert_eq!(probe.runs(), 0, "never executes");
    let approved = call(&registry, guarded(&["d1", "d2"]).confirmation(&id)).await;
    assert!(approved.is_ok(), "{approved:?}");
    assert_eq!(probe.runs(), 1);
}

#[tokio::test]
async fn as_confirm_003_evidence_is_single_use() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let id = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    registry.confirmations().approve_id(&id).unwrap();
    assert!(
        call(&registry, guarded(&["d1"]).confirmation(&id))
            .await
            .is_ok()
    );
    let replay = call(&registry, guarded(&["d1"]).confirmation(&id)).await;
    assert_eq!(
        replay.error().unwrap().detail("reason"),
        Some(&json!("consumed"))
    );
    assert_eq!(replay.error().unwrap().retry(), Retry::No);
    assert_eq!(probe.runs(), 1);
}

#[tokio::test]
async fn as_confirm_004_evidence_cannot_cross_consumer_registration_or_capability() {
    let registry = registry();
    let probe = Probe::new();
    let a = registry.mount_instance(probe.clone(), "a").unwrap();
    let _b = registry.mount_instance(Probe::new(), "b").unwrap();
    let id = confirmation_id(&call(&registry, guarded(&["d1"]).instance("a")).await);
    registry.confirmations().approve_id(&id).unwrap();
    let mismatch = |result: InvocationResult| {
        let error = result.error().cloned().unwrap();
        assert_eq!(error.code(), ErrorCode::ConfirmationInvalid, "{error:?}");
        assert_eq!(error.detail("reason"), Some(&json!("mismatch")));
    };
    // Another consumer.
    mismatch(
        registry
            .invoke(
                guarded(&["d1"]).instance("a").confirmation(&id),
                InvokeOptions::consumer(consumer("mallory")),
            )
            .await,
    );
    // Another registration (instance b).
    mismatch(call(&registry, guarded(&["d1"]).instance("b").confirmation(&id)).await);
    // Another capability.
    mismatch(
        call(
            &registry,
            Invocation::new("view:test.probe.guardedToo")
                .instance("a")
                .input(json!({"ids": ["d1"]}))
                .confirmation(&id),
        )
        .await,
    );
    // Another registry.
    let other = Registry::builder().build();
    let _c = other.mount_instance(Probe::new(), "a").unwrap();
    mismatch(
        other
            .invoke(
                guarded(&["d1"]).instance("a").confirmation(&id),
                InvokeOptions::consumer(consumer("tester")),
            )
            .await,
    );
    // Staleness beats confirmation: the registration died while approved.
    drop(a);
    let stale = call(&registry, guarded(&["d1"]).instance("a").confirmation(&id)).await;
    assert_eq!(code(&stale), Some(ErrorCode::ComponentUnmounted));
    assert_eq!(probe.runs(), 0, "nothing executed");
}

#[tokio::test]
async fn as_confirm_005_pending_confirmations_are_bounded() {
    let registry = Registry::builder()
        .limits(Limits::default().max_pending_confirmations(3))
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    for n in 0..3 {
        confirmation_id(&call(&registry, guarded(&[&format!("d{n}")])).await);
    }
    let overflow = call(&registry, guarded(&["d9"])).await;
    let error = overflow.error().unwrap();
    assert_eq!(error.code(), ErrorCode::RateLimited);
    assert_eq!(error.detail("reason"), Some(&json!("queue-full")));
    assert_eq!(
        registry.confirmations().pending().len(),
        3,
        "no record was created"
    );
}

#[tokio::test(start_paused = true)]
async fn as_confirm_006_rerequest_returns_the_same_id_denial_is_final_and_expiry_restarts() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let _subscription = registry.subscribe({
        let events = Arc::clone(&events);
        move |event| match event {
            SurfaceEvent::ConfirmationRequested {
                confirmation_id, ..
            } => {
                events
                    .lock()
                    .unwrap()
                    .push(format!("requested:{confirmation_id}"));
            }
            SurfaceEvent::ConfirmationResolved {
                confirmation_id,
                outcome,
                ..
            } => {
                events
                    .lock()
                    .unwrap()
                    .push(format!("{outcome}:{confirmation_id}"));
            }
            _ => {}
        }
    });
    let id = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    // Retried while pending, with or without the id: the same confirmation.
    assert_eq!(
        confirmation_id(&call(&registry, guarded(&["d1"]).confirmation(&id)).await),
        id
    );
    assert_eq!(
        confirmation_id(&call(&registry, guarded(&["d1"])).await),
        id
    );
    // Denial: final, retry `no`.
    registry.confirmations().deny_id(&id).unwrap();
    let denied = call(&registry, guarded(&["d1"]).confirmation(&id)).await;
    assert_eq!(
        denied.error().unwrap().detail("reason"),
        Some(&json!("denied"))
    );
    assert_eq!(denied.error().unwrap().retry(), Retry::No);
    // Expiry: the cycle restarts with a new confirmation.
    let second = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    assert_ne!(second, id);
    let waiter = tokio::spawn({
        let registry = registry.clone();
        let second = second.clone();
        async move { registry.confirmations().wait_for(&second).await }
    });
    tokio::time::advance(Duration::from_secs(121)).await;
    settle_tasks().await;
    assert_eq!(waiter.await.unwrap(), Some(ConfirmationOutcome::Expired));
    let expired = call(&registry, guarded(&["d1"]).confirmation(&second)).await;
    assert_eq!(
        expired.error().unwrap().detail("reason"),
        Some(&json!("expired"))
    );
    assert_eq!(expired.error().unwrap().retry(), Retry::WithConfirmation);
    let third = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    assert_ne!(third, second);
    assert_eq!(probe.runs(), 0);
    let log = events.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            format!("requested:{id}"),
            format!("denied:{id}"),
            format!("requested:{second}"),
            format!("expired:{second}"),
            format!("requested:{third}"),
        ],
        "requested strictly before resolved"
    );
}

#[tokio::test]
async fn as_ident_006_confirmation_retry_reuses_the_invocation_id_and_executes_once() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let first = call(&registry, guarded(&["d1"]).invocation_id("tool-7")).await;
    let id = confirmation_id(&first);
    registry.confirmations().approve_id(&id).unwrap();
    // CONFIRMATION_REQUIRED was not cached: the retry with the same
    // invocation id (now carrying the confirmation id) executes.
    let retry = guarded(&["d1"]).invocation_id("tool-7").confirmation(&id);
    let done = call(&registry, retry.clone()).await;
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(
        call(&registry, retry).await,
        done,
        "a transport retry gets the cached result"
    );
    assert_eq!(probe.runs(), 1, "executed once");

    // RATE_LIMITED is not cached either.
    let registry = Registry::builder()
        .limits(Limits::default().max_pending_confirmations(1))
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let blocking = confirmation_id(&call(&registry, guarded(&["x"])).await);
    let limited = call(&registry, guarded(&["y"]).invocation_id("tool-8")).await;
    assert_eq!(code(&limited), Some(ErrorCode::RateLimited));
    registry.confirmations().deny_id(&blocking).unwrap();
    let again = call(&registry, guarded(&["y"]).invocation_id("tool-8")).await;
    assert_eq!(
        code(&again),
        Some(ErrorCode::ConfirmationRequired),
        "the retry ran again"
    );
}
