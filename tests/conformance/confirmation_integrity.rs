//! Confirmation integrity: an approval is used up only by a call that runs
//! (AS-CONFIRM-003), one consumer cannot take every pending slot
//! (AS-CONFIRM-005), bound values stay visible in the summary
//! (AS-INVOKE-005), and what the human reads carries no hidden characters.

use crate::fixtures::AnswerById;
use std::sync::Arc;

use agent_surface::policy::require_confirmation;
use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{Probe, call, code, confirmation_id, consumer, registry, settle_tasks};
use crate::procedures::{ExportReport, FakeBackend, Screen, registry_with};

fn guarded(ids: &[&str]) -> Invocation {
    Invocation::new("view:test.probe.guarded").input(json!({"ids": ids}))
}

/// Fills the probe's instance queue: one `hold` running, `depth` waiting.
async fn fill_instance_queue(registry: &Registry, depth: usize) {
    for _ in 0..=depth {
        tokio::spawn({
            let registry = registry.clone();
            async move { call(&registry, Invocation::new("view:test.probe.hold")).await }
        });
    }
    settle_tasks().await;
}

fn reason(result: &InvocationResult) -> Option<&Value> {
    result.error().and_then(|error| error.detail("reason"))
}

#[tokio::test]
async fn as_confirm_003_an_approval_refused_at_the_queue_stays_usable_then_is_consumed_once() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let id = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    registry.confirmations().approve_id(&id).unwrap();

    // Phase 8 refuses the approved call: the queue is full.
    fill_instance_queue(&registry, registry.limits().action_queue_depth).await;
    let refused = call(&registry, guarded(&["d1"]).confirmation(&id)).await;
    assert_eq!(code(&refused), Some(ErrorCode::RateLimited));
    assert_eq!(reason(&refused), Some(&json!("queue-full")));

    // The queue drains; the retry with the same confirmation id runs.
    probe.open();
    settle_tasks().await;
    let runs_before = probe.runs();
    let retried = call(&registry, guarded(&["d1"]).confirmation(&id)).await;
    assert!(retried.is_ok(), "{retried:?}");
    assert_eq!(probe.runs(), runs_before + 1);

    // Executed once: now it is consumed.
    let replay = call(&registry, guarded(&["d1"]).confirmation(&id)).await;
    assert_eq!(code(&replay), Some(ErrorCode::ConfirmationInvalid));
    assert_eq!(reason(&replay), Some(&json!("consumed")));
    assert_eq!(probe.runs(), runs_before + 1);
}

#[tokio::test]
async fn as_confirm_003_a_call_cancelled_while_queued_gives_its_approval_back() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let id = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    registry.confirmations().approve_id(&id).unwrap();
    fill_instance_queue(&registry, 0).await;

    // Queued behind `hold`, holding the approval.
    let token = CancellationToken::new();
    let queued = tokio::spawn({
        let registry = registry.clone();
        let options = InvokeOptions::consumer(consumer("tester")).cancellation(token.clone());
        let invocation = guarded(&["d1"]).confirmation(&id);
        async move { registry.invoke(invocation, options).await }
    });
    settle_tasks().await;

    // Meanwhile the same evidence cannot be presented by a second call.
    let concurrent = call(&registry, guarded(&["d1"]).confirmation(&id)).await;
    assert_eq!(code(&concurrent), Some(ErrorCode::ConfirmationInvalid));
    assert_eq!(reason(&concurrent), Some(&json!("consumed")));

    token.cancel();
    let cancelled = queued.await.unwrap();
    assert_eq!(code(&cancelled), Some(ErrorCode::Cancelled));
    assert_eq!(probe.runs(), 0, "the guarded call never ran");

    probe.open();
    settle_tasks().await;
    let retried = call(&registry, guarded(&["d1"]).confirmation(&id)).await;
    assert!(retried.is_ok(), "{retried:?}");
    assert_eq!(
        probe.seen.lock().unwrap().as_slice(),
        ["d1"],
        "the guarded call ran exactly once"
    );
}

#[tokio::test]
async fn as_confirm_005_one_consumer_cannot_take_every_pending_slot() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let quota = registry.limits().max_pending_confirmations_per_consumer;
    assert_eq!(quota, 8, "the documented default");
    assert!(quota < registry.limits().max_pending_confirmations);
    let as_ = |who: &str, ids: &[&str]| {
        let registry = registry.clone();
        let invocation = guarded(ids);
        let options = InvokeOptions::consumer(consumer(who));
        async move { registry.invoke(invocation, options).await }
    };
    let mut mallorys = Vec::new();
    for n in 0..quota {
        mallorys.push(confirmation_id(&as_("mallory", &[&format!("d{n}")]).await));
    }
    // Over the quota: the global cap's refusal, and no record.
    let over = as_("mallory", &["d99"]).await;
    let error = over.error().unwrap();
    assert_eq!(error.code(), ErrorCode::RateLimited);
    assert_eq!(error.detail("reason"), Some(&json!("queue-full")));
    assert!(error.detail("retryAfterMs").is_some());
    assert_eq!(registry.confirmations().pending().len(), quota);

    // Another consumer still gets its confirmation.
    let alice = confirmation_id(&as_("alice", &["d1"]).await);
    assert_eq!(registry.confirmations().pending().len(), quota + 1);
    assert!(!mallorys.contains(&alice));

    // An answer frees a slot of the consumer it belonged to.
    registry.confirmations().deny_id(&mallorys[0]).unwrap();
    confirmation_id(&as_("mallory", &["d99"]).await);
}

#[tokio::test]
async fn as_invoke_005_bound_values_stay_visible_past_a_long_agent_field() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let fields = ExportReport::fields();
    let _mounted = registry
        .mounting(Arc::new(Screen::default()))
        .procedure(
            ProcedureRef::<ExportReport>::new()
                .bind(fields.report_id, || "weekly-revenue-2024".to_owned())
                .confirmation(Confirmation::Required),
        )
        .mount()
        .unwrap();
    // `note` sorts before the bound `reportId`.
    let note = "n".repeat(400);
    let asked = call(
        &registry,
        Invocation::new("domain:test.reports.export").input(json!({"format": "csv", "note": note})),
    )
    .await;
    confirmation_id(&asked);
    let summary = asked.error().unwrap().detail("summary").unwrap();
    let summary = summary.as_str().unwrap();
    assert!(summary.chars().count() <= 300, "{summary}");
    assert!(
        summary.contains(r#""reportId":"weekly-revenue-2024""#),
        "{summary}"
    );
    assert!(
        summary.ends_with('…'),
        "the agent's note was cut: {summary}"
    );
    let pending = &registry.confirmations().pending()[0];
    assert_eq!(pending.summary, summary);
    assert_eq!(
        pending.input["note"],
        json!(note),
        "the input itself is exact"
    );
}

/// Every code point the issue lists, and a few more invisible ones.
const HIDDEN: [char; 20] = [
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}', '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}',
    '\u{FEFF}', '\u{00AD}', '\n', '\u{001B}',
];

fn assert_escaped(text: &str) {
    for hidden in HIDDEN {
        assert!(
            !text.contains(hidden),
            "U+{:04X} reached the human: {text:?}",
            u32::from(hidden)
        );
        // Control characters inside JSON text are already JSON escapes.
        if !hidden.is_control() {
            let escape = format!("\\u{{{:04X}}}", u32::from(hidden));
            assert!(text.contains(&escape), "{escape} missing from {text}");
        }
    }
}

#[tokio::test]
async fn confirmation_text_escapes_bidi_zero_width_and_control_characters() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let payload: String = HIDDEN.iter().map(|c| format!("x{c}")).collect();
    let asked = call(&registry, guarded(&[&payload])).await;
    confirmation_id(&asked);
    let summary = asked.error().unwrap().detail("summary").unwrap();
    assert_escaped(summary.as_str().unwrap());
    let pending = &registry.confirmations().pending()[0];
    assert_escaped(&pending.summary);
    assert_escaped(&pending.display_input());
    assert_eq!(
        pending.input,
        json!({"ids": [payload]}),
        "the approved input stays exact"
    );

    // A policy's own summary (often built from the input) is escaped too.
    let registry = Registry::builder()
        .policy(require_confirmation().summary(|ctx| {
            let ids = ctx.effective_input()["ids"].as_array().cloned();
            let first = ids.and_then(|ids| ids.first()?.as_str().map(str::to_owned));
            format!("Poke {}", first.unwrap_or_default())
        }))
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let asked = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": [payload]})),
    )
    .await;
    confirmation_id(&asked);
    let summary = asked.error().unwrap().detail("summary").unwrap();
    assert_escaped(summary.as_str().unwrap());
    let summary = summary.as_str().unwrap();
    assert!(summary.starts_with("Poke x\\u{202A}x"), "{summary}");
    assert!(summary.ends_with("x\\u{000A}x\\u{001B}"), "{summary}");
}

#[tokio::test]
async fn as_life_001_an_unmount_racing_a_confirmation_request_leaves_no_request_behind() {
    // The presenter is host code run before the request is filed: here it
    // unmounts the component, as a route change could at that moment. The
    // unmount's withdrawal finds nothing yet; the request must not be filed
    // for a registration that is gone.
    let handle: Arc<std::sync::Mutex<Option<agent_surface::Mounted>>> = Arc::default();
    let slot = Arc::clone(&handle);
    let registry = Registry::builder()
        .environment(Environment::Test)
        .confirmation_presenter(move |_| {
            drop(slot.lock().unwrap().take());
            None
        })
        .build();
    let probe = Probe::new();
    *handle.lock().unwrap() = Some(registry.mount(probe.clone()).unwrap());

    let result = call(&registry, guarded(&["a"])).await;
    assert_eq!(code(&result), Some(ErrorCode::ComponentUnmounted));
    assert!(registry.confirmations().pending().is_empty());
    assert_eq!(probe.runs(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_life_001_asking_again_while_an_unmount_is_under_way_settles_unmounted() {
    // An unmount marks its registration gone, tells its listeners, then
    // withdraws its requests. A call that resolved before the unmount and
    // asks again, in between, for an identical pending request is told
    // the component is gone, not handed the request about to be withdrawn.
    // The gate starts open: the first call files the request; closed
    // after it, it holds the next call past resolution.
    let entered = Arc::new(tokio::sync::Notify::new());
    let (open, gate) = tokio::sync::watch::channel(true);
    let registry = Registry::builder()
        .environment(Environment::Test)
        .policy(crate::fixtures::Held {
            entered: Arc::clone(&entered),
            gate,
        })
        .build();
    let mounted = registry.mount(Probe::new()).unwrap();
    let first = confirmation_id(&call(&registry, guarded(&["same"])).await);
    entered.notified().await; // the first call's
    open.send_replace(false);
    let (settled_tx, settled_rx) = std::sync::mpsc::channel();
    let again = tokio::spawn({
        let registry = registry.clone();
        async move {
            let result = call(&registry, guarded(&["same"])).await;
            let _ = settled_tx.send(());
            result
        }
    });
    entered.notified().await;
    // Runs after the registration is marked gone, before its withdrawal:
    // lets the held call finish meanwhile.
    let settled_rx = std::sync::Mutex::new(settled_rx);
    let _listening = registry.subscribe(move |event| {
        if matches!(
            event,
            agent_surface::events::SurfaceEvent::ComponentUnregistered { .. }
        ) {
            open.send_replace(true);
            settled_rx
                .lock()
                .unwrap()
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("the held call settles while the unmount waits");
        }
    });
    tokio::task::spawn_blocking(move || drop(mounted))
        .await
        .unwrap();

    let again = again.await.unwrap();
    assert_eq!(
        code(&again),
        Some(ErrorCode::ComponentUnmounted),
        "{again:?}"
    );
    assert!(registry.confirmations().pending().is_empty());
    assert!(registry.confirmations().find(&first).is_none());
}
