//! The pipeline in a browser page (`wasm32-unknown-unknown`), run by
//! `wasm-bindgen-test` in headless Chromium: timeouts on the page's timers,
//! confirmation expiry, dedupe, the confirmation round trip and rate limits
//! on the page's clock, and proof of presence (AS-CONFIRM-001) in the page.
//! `.ci/run` runs it:
//!
//! ```text
//! CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!   cargo test -p agent-surface-wasm-tests --target wasm32-unknown-unknown
//! ```
//!
//! Natively this file is empty.

#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // test code

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_surface::confirmation::{
    PresenceChallenge, PresenceMethod, PresenceRefusal, PresenceRule, PresenceVerifier,
    ResolveError, VerifiedPresence,
};
use agent_surface::prelude::*;
use agent_surface::registry::Limits;
use serde_json::json;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// How many times handlers ran.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
struct Counted {
    /// Runs so far.
    runs: usize,
}

/// A lamp in a page.
struct Lamp {
    runs: AtomicUsize,
}

/// A lamp whose handlers count their runs.
#[agent_component(type = "page.lamp")]
impl Lamp {
    /// Counts a run.
    #[action(effect = "local-state")]
    fn toggle(&self) -> Counted {
        Counted {
            runs: self.runs.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }

    /// Never finishes: its timeout settles it.
    #[action(effect = "local-state", timeout = "50ms")]
    async fn stall(&self) -> Counted {
        std::future::pending::<()>().await;
        Counted { runs: 0 }
    }

    /// Needs the person's approval.
    #[action(effect = "local-state", confirmation = "required")]
    fn guarded(&self) -> Counted {
        Counted {
            runs: self.runs.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }
}

fn lamp() -> Arc<Lamp> {
    Arc::new(Lamp {
        runs: AtomicUsize::new(0),
    })
}

/// Waits on the page's timer.
async fn wait(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}

#[wasm_bindgen_test]
async fn an_action_runs_and_a_retry_replays() {
    let registry = Registry::builder().environment(Environment::Test).build();
    let _mounted = registry.mount(lamp()).unwrap();
    let call = || {
        registry.invoke(
            Invocation::new("view:page.lamp.toggle").invocation_id("t-1"),
            InvokeOptions::default(),
        )
    };
    let first = call().await;
    assert_eq!(first.output(), Some(&json!({"runs": 1})), "{first:?}");
    let again = call().await;
    assert_eq!(
        again.output(),
        Some(&json!({"runs": 1})),
        "replayed, not run"
    );
}

#[wasm_bindgen_test]
async fn a_timeout_settles_on_the_pages_timer() {
    let registry = Registry::builder().environment(Environment::Test).build();
    let _mounted = registry.mount(lamp()).unwrap();
    let result = registry
        .invoke(
            Invocation::new("view:page.lamp.stall"),
            InvokeOptions::default(),
        )
        .await;
    assert_eq!(
        result.error().map(ErrorPayload::code),
        Some(ErrorCode::Timeout)
    );
}

#[wasm_bindgen_test]
async fn a_confirmation_is_approved_then_runs_once_and_another_expires() {
    let registry = Registry::builder()
        .environment(Environment::Test)
        .limits(Limits::default().confirmation_ttl(Duration::from_millis(80)))
        .build();
    let _mounted = registry.mount(lamp()).unwrap();
    let ask = |id: &'static str| {
        registry.invoke(
            Invocation::new("view:page.lamp.guarded").invocation_id(id),
            InvokeOptions::default(),
        )
    };
    let asked = ask("g-1").await;
    let confirmation = asked
        .error()
        .and_then(|error| error.detail("confirmationId"))
        .and_then(serde_json::Value::as_str)
        .expect("a confirmation")
        .to_owned();
    let pending = registry.confirmations().find(&confirmation).unwrap();
    registry.confirmations().approve(&pending.shown()).unwrap();
    let ran = registry
        .invoke(
            Invocation::new("view:page.lamp.guarded")
                .invocation_id("g-1")
                .confirmation(confirmation),
            InvokeOptions::default(),
        )
        .await;
    assert_eq!(ran.output(), Some(&json!({"runs": 1})), "{ran:?}");

    // Another request nobody answers expires on the page's timer.
    let _ = ask("g-2").await;
    assert_eq!(registry.confirmations().pending().len(), 1);
    wait(200).await;
    assert!(registry.confirmations().pending().is_empty(), "expired");
}

#[wasm_bindgen_test]
async fn a_rate_limit_counts_on_the_pages_clock() {
    let registry = Registry::builder()
        .environment(Environment::Test)
        .policy(agent_surface::policy::rate_limit(
            2,
            Duration::from_secs(60),
        ))
        .build();
    let _mounted = registry.mount(lamp()).unwrap();
    let mut codes = Vec::new();
    for _ in 0..3 {
        let result = registry
            .invoke(
                Invocation::new("view:page.lamp.toggle"),
                InvokeOptions::default(),
            )
            .await;
        codes.push(result.error().map(ErrorPayload::code));
    }
    assert_eq!(codes, [None, None, Some(ErrorCode::RateLimited)]);
}

#[wasm_bindgen_test]
async fn listeners_hear_every_event_in_order_on_the_pages_one_thread() {
    let registry = Registry::builder().environment(Environment::Test).build();
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let _subscription = {
        let heard = Arc::clone(&heard);
        registry.subscribe(move |event| {
            if let Ok(mut heard) = heard.lock() {
                heard.push(format!("{event:?}").chars().take(24).collect::<String>());
            }
        })
    };
    let mounted = registry.mount(lamp()).unwrap();
    let _ = registry
        .invoke(
            Invocation::new("view:page.lamp.toggle"),
            InvokeOptions::default(),
        )
        .await;
    drop(mounted);
    let heard = heard.lock().unwrap().clone();
    assert!(heard.len() >= 3, "{heard:?}");
    assert_eq!(registry.event_backlog(), 0, "nothing left undelivered");
}

/// A verifier that accepts a proof naming the request it was asked about
/// (`{"for": id}`), with the person verified: what a host's verifier says,
/// the registry checks.
struct Named;

impl PresenceVerifier for Named {
    fn verify(
        &self,
        challenge: &PresenceChallenge,
        _person: &str,
        proof: &serde_json::Value,
    ) -> Result<VerifiedPresence, PresenceRefusal> {
        let named = proof["for"].as_str().ok_or(PresenceRefusal::Invalid)?;
        Ok(VerifiedPresence {
            method: PresenceMethod::Webauthn,
            credential_id: Arc::from("cred-1"),
            user_verified: true,
            confirmation_id: Arc::from(named),
            digest: challenge.digest.clone(),
        })
    }
}

#[wasm_bindgen_test]
async fn as_confirm_001_in_the_page_a_request_that_needs_presence_refuses_a_plain_click() {
    let registry = Registry::builder()
        .environment(Environment::Test)
        .approval_channel("page-dialog")
        .require_presence(
            PresenceRule::none().capability("view:page.lamp.guarded"),
            Named,
        )
        .build();
    let _mounted = registry.mount(lamp()).unwrap();
    let asked = registry
        .invoke(
            Invocation::new("view:page.lamp.guarded").invocation_id("p-1"),
            InvokeOptions::default(),
        )
        .await;
    let id = asked
        .error()
        .and_then(|error| error.detail("confirmationId"))
        .and_then(serde_json::Value::as_str)
        .expect("a confirmation")
        .to_owned();
    let confirmations = registry.confirmations();
    let pending = confirmations.find(&id).unwrap();
    assert!(pending.presence_required);
    let shown = pending.shown();
    let dialog = confirmations.approver("page-dialog", "person").unwrap();
    // The dialog's click is no approval; a proof for another request is
    // refused; only the proof for this one counts.
    assert_eq!(
        confirmations.resolve(&shown, true, &dialog),
        Err(ResolveError::PresenceRequired)
    );
    assert!(
        confirmations
            .approve_with_presence(&shown, &dialog, &json!({"for": "cnf_other"}))
            .is_err()
    );
    let resolution = confirmations
        .approve_with_presence(&shown, &dialog, &json!({"for": id}))
        .unwrap();
    assert!(resolution.person_verified.is_some());
    let ran = registry
        .invoke(
            Invocation::new("view:page.lamp.guarded")
                .invocation_id("p-1")
                .confirmation(id),
            InvokeOptions::default(),
        )
        .await;
    assert_eq!(ran.output(), Some(&json!({"runs": 1})), "{ran:?}");
}
