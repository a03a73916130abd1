//! Who may approve: approval channels, answers that name what was shown,
//! and withdrawal instead of silent voids (AS-CONFIRM-001, -004).

use std::sync::Arc;

use agent_surface::audit::AuditKind;
use agent_surface::confirmation::{
    ChannelError, ChannelKind, ConfirmationOutcome, HOST_CHANNEL, ResolveError,
};
use agent_surface::error::Retry;
use agent_surface::prelude::*;
use agent_surface::registry::{DuplicatePolicy, Registry};
use serde_json::json;

use crate::fixtures::{Probe, call, confirmation_id, consumer};

fn guarded(ids: &[&str]) -> Invocation {
    Invocation::new("view:test.probe.guarded").input(json!({"ids": ids}))
}

fn console_registry() -> Registry {
    Registry::builder()
        .environment(Environment::Test)
        .approval_channel("console")
        .duplicate_instances(DuplicatePolicy::Replace)
        .build()
}

#[tokio::test]
async fn as_confirm_001_an_answer_names_the_request_shown_and_never_resolves_another() {
    let registry = console_registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let a = confirmation_id(&call(&registry, guarded(&["a"])).await);
    let b = confirmation_id(&call(&registry, guarded(&["b"])).await);
    let confirmations = registry.confirmations();
    let shown_a = confirmations.find(&a).unwrap().shown();
    let shown_b = confirmations.find(&b).unwrap().shown();
    assert_ne!(shown_a.digest, shown_b.digest);
    let person = confirmations.approver("console", "alice").unwrap();

    // A click keyed to what the dialog showed: A's id with B's digest, or
    // B's id with A's digest, resolves nothing.
    let crossed = agent_surface::confirmation::ShownRequest {
        confirmation_id: shown_a.confirmation_id.clone(),
        digest: shown_b.digest.clone(),
    };
    assert_eq!(
        confirmations.resolve(&crossed, true, &person),
        Err(ResolveError::NotShown)
    );
    let crossed = agent_surface::confirmation::ShownRequest {
        confirmation_id: shown_b.confirmation_id.clone(),
        digest: shown_a.digest.clone(),
    };
    assert_eq!(
        confirmations.resolve(&crossed, true, &person),
        Err(ResolveError::NotShown)
    );
    assert_eq!(confirmations.pending().len(), 2, "nothing was resolved");

    // Answering A resolves A alone.
    confirmations.resolve(&shown_a, true, &person).unwrap();
    let pending = confirmations.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(*pending[0].confirmation_id, *b);
    let run = call(&registry, guarded(&["a"]).confirmation(&a)).await;
    assert!(run.is_ok(), "{run:?}");
    let still = call(&registry, guarded(&["b"]).confirmation(&b)).await;
    assert_eq!(
        still.error().map(ErrorPayload::code),
        Some(ErrorCode::ConfirmationRequired),
        "B is still waiting for the person"
    );
    assert_eq!(probe.runs(), 1);
}

#[tokio::test]
async fn every_resolution_records_its_channel_and_approver() {
    let registry = console_registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let confirmations = registry.confirmations();
    assert!(confirmations.has_in_app_channel());
    assert!(
        !crate::fixtures::registry()
            .confirmations()
            .has_in_app_channel()
    );
    assert_eq!(
        confirmations.approver("pager", "alice"),
        Err(ChannelError::Undeclared("pager".to_owned()))
    );
    assert!(confirmations.approver(HOST_CHANNEL, "ops").is_ok());

    let id = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    let person = confirmations.approver("console", "alice").unwrap();
    assert_eq!(person.kind(), ChannelKind::InApp);
    let shown = confirmations.find(&id).unwrap().shown();
    let resolution = confirmations.resolve(&shown, true, &person).unwrap();
    assert_eq!(resolution.outcome, ConfirmationOutcome::Approved);
    assert_eq!(resolution.channel.as_deref(), Some("console"));
    assert_eq!(resolution.channel_kind, Some(ChannelKind::InApp));
    assert_eq!(resolution.approver.as_deref(), Some("alice"));
    assert_eq!(confirmations.resolution(&id), Some(resolution.clone()));
    assert_eq!(
        confirmations.resolve(&shown, true, &person),
        Err(ResolveError::NotPending),
        "answered once"
    );
    let run = call(&registry, guarded(&["d1"]).confirmation(&id)).await;
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(
        confirmations.resolution(&id).and_then(|r| r.approver),
        Some(Arc::from("alice")),
        "still known after it was consumed"
    );
    let approved = registry
        .audit_log()
        .into_iter()
        .find(|event| event.kind == AuditKind::ConfirmationApproved)
        .unwrap();
    let detail = approved.detail.unwrap();
    assert_eq!(detail["channel"], json!("console"));
    assert_eq!(detail["channelKind"], json!("in-app"));
    assert_eq!(detail["approver"], json!("alice"));
    assert_eq!(detail["confirmationId"], json!(id));
}

#[tokio::test]
async fn as_confirm_004_an_agent_connection_answers_only_its_own_consumers_requests() {
    let registry = console_registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let asked_by = |who: &'static str| {
        let registry = registry.clone();
        async move {
            registry
                .invoke(guarded(&[who]), InvokeOptions::consumer(consumer(who)))
                .await
        }
    };
    let mine = confirmation_id(&asked_by("agent-a").await);
    let theirs = confirmation_id(&asked_by("agent-b").await);
    let confirmations = registry.confirmations();
    let connection =
        confirmations.connection_approver("mcp-elicitation", &consumer("agent-a"), "client 1.0");
    assert_eq!(connection.kind(), ChannelKind::AgentConnection);
    let shown_theirs = confirmations.find(&theirs).unwrap().shown();
    assert_eq!(
        confirmations.resolve(&shown_theirs, true, &connection),
        Err(ResolveError::NotPermitted),
        "another consumer's request"
    );
    assert!(confirmations.find(&theirs).is_some(), "still pending");
    let shown_mine = confirmations.find(&mine).unwrap().shown();
    let resolution = confirmations
        .resolve(&shown_mine, true, &connection)
        .unwrap();
    assert_eq!(resolution.channel.as_deref(), Some("mcp-elicitation"));
    assert_eq!(resolution.channel_kind, Some(ChannelKind::AgentConnection));
    assert_eq!(resolution.approver.as_deref(), Some("client 1.0"));
}

#[tokio::test]
async fn a_replaced_registration_withdraws_its_requests_visibly() {
    let registry = console_registry();
    let probe = Probe::new();
    let first = registry.mount(probe.clone()).unwrap();
    let id = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    let waiting = {
        let confirmations = registry.confirmations();
        let id = id.clone();
        tokio::spawn(async move { confirmations.wait_for(&id).await })
    };
    tokio::task::yield_now().await;

    // A reload or another tab mounts the same instance again.
    let _second = registry.mount(probe.clone()).unwrap();
    assert!(
        registry.confirmations().pending().is_empty(),
        "no dialog offers it"
    );
    assert_eq!(
        waiting.await.unwrap(),
        Some(ConfirmationOutcome::Withdrawn),
        "a call waiting for the person settles at once"
    );
    let resolution = registry.confirmations().resolution(&id).unwrap();
    assert_eq!(resolution.outcome, ConfirmationOutcome::Withdrawn);
    assert_eq!(resolution.reason, Some("replaced"));
    assert_eq!(resolution.channel, None);

    // The agent's retry is told why, and may ask anew.
    let retry = registry
        .invoke(
            guarded(&["d1"])
                .confirmation(&id)
                .registration(first.registration_id()),
            InvokeOptions::consumer(consumer("tester")),
        )
        .await;
    let error = retry.error().unwrap();
    assert!(
        error.code() == ErrorCode::StaleCapability
            || (error.code() == ErrorCode::ConfirmationInvalid
                && error.detail("reason") == Some(&json!("withdrawn"))),
        "{error:?}"
    );
    let without_token = call(&registry, guarded(&["d1"]).confirmation(&id)).await;
    let error = without_token.error().unwrap();
    assert_eq!(error.code(), ErrorCode::ConfirmationInvalid);
    assert_eq!(error.detail("reason"), Some(&json!("withdrawn")));
    assert_eq!(error.retry(), Retry::WithConfirmation);
    let withdrawn = registry
        .audit_log()
        .into_iter()
        .find(|event| event.kind == AuditKind::ConfirmationWithdrawn)
        .unwrap();
    assert_eq!(withdrawn.detail.unwrap()["reason"], json!("replaced"));
    assert_eq!(probe.runs(), 0);
}

#[tokio::test]
async fn an_unmount_withdraws_its_requests_and_the_person_cannot_approve_them() {
    let registry = console_registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let id = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    let confirmations = registry.confirmations();
    let shown = confirmations.find(&id).unwrap().shown();
    drop(mounted);
    assert!(confirmations.pending().is_empty());
    let person = confirmations.approver("console", "alice").unwrap();
    assert_eq!(
        confirmations.resolve(&shown, true, &person),
        Err(ResolveError::NotPending),
        "a withdrawn request cannot be approved"
    );
    let resolution = confirmations.resolution(&id).unwrap();
    assert_eq!(resolution.outcome, ConfirmationOutcome::Withdrawn);
    assert_eq!(resolution.reason, Some("unmounted"));
    assert_eq!(probe.runs(), 0);
}

#[tokio::test]
async fn a_request_whose_own_input_changed_before_the_answer_is_withdrawn_visibly() {
    let registry = console_registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let confirmations = registry.confirmations();

    // Another consumer presenting the id with other input changes nothing.
    let id = confirmation_id(&call(&registry, guarded(&["d1"])).await);
    let stranger = registry
        .invoke(
            guarded(&["d2"]).confirmation(&id),
            InvokeOptions::consumer(consumer("stranger")),
        )
        .await;
    assert_eq!(
        stranger.error().and_then(|e| e.detail("reason")),
        Some(&json!("mismatch"))
    );
    assert!(confirmations.find(&id).is_some(), "still pending");

    // The asker's own retry with changed input: the dialog stops offering it.
    let changed = call(&registry, guarded(&["d1", "d9"]).confirmation(&id)).await;
    assert_eq!(
        changed.error().and_then(|e| e.detail("reason")),
        Some(&json!("mismatch"))
    );
    assert!(confirmations.find(&id).is_none(), "withdrawn");
    let resolution = confirmations.resolution(&id).unwrap();
    assert_eq!(resolution.outcome, ConfirmationOutcome::Withdrawn);
    assert_eq!(resolution.reason, Some("input-changed"));

    // An approval, though, stays usable for exactly the input approved.
    let id = confirmation_id(&call(&registry, guarded(&["d3"])).await);
    confirmations
        .approve(&confirmations.find(&id).unwrap().shown())
        .unwrap();
    let switched = call(&registry, guarded(&["d3", "d4"]).confirmation(&id)).await;
    assert_eq!(
        switched.error().and_then(|e| e.detail("reason")),
        Some(&json!("mismatch"))
    );
    let run = call(&registry, guarded(&["d3"]).confirmation(&id)).await;
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(probe.runs(), 1);
}

#[tokio::test]
async fn the_hosts_presentation_is_escaped_and_bounded_and_a_panicking_presenter_presents_the_description()
 {
    use agent_surface::confirmation::Presentation;
    let registry = Registry::builder()
        .environment(Environment::Test)
        .confirmation_presenter(|request| {
            let ids = request.input["ids"].as_array()?;
            assert!(ids.len() < 2, "a presenter that panics on some input");
            Some(
                Presentation::new(
                    format!("Wipe \u{202e}{}", "x".repeat(500)),
                    "Wipe\u{200b} it",
                    "",
                )
                .items((0..500).map(|n| format!("item {n}")))
                .agent_note("n".repeat(2000)),
            )
        })
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let confirmations = registry.confirmations();

    let id = confirmation_id(&call(&registry, guarded(&["a"])).await);
    let shown = confirmations.find(&id).unwrap().presentation;
    assert!(!shown.title.contains('\u{202e}'), "{}", shown.title);
    assert!(shown.title.contains("\\u{202E}"), "{}", shown.title);
    assert!(shown.title.chars().count() <= 160);
    assert!(!shown.action.contains('\u{200b}'));
    assert!(shown.items.len() <= 100);
    assert!(shown.agent_note.unwrap().chars().count() <= 300);

    // The presenter panics: contained, the description is presented.
    let id = confirmation_id(&call(&registry, guarded(&["a", "b"])).await);
    let fallback = confirmations.find(&id).unwrap().presentation;
    assert_eq!(fallback.action, "Approve");
    assert!(!fallback.title.is_empty());
    assert_eq!(probe.runs(), 0);
}

#[tokio::test]
async fn an_agent_asking_again_while_the_person_reads_is_not_presented_anew() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let presented = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&presented);
    let registry = Registry::builder()
        .environment(Environment::Test)
        .confirmation_presenter(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
            None
        })
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let first = confirmation_id(&call(&registry, guarded(&["a"])).await);
    for _ in 0..5 {
        let again = confirmation_id(&call(&registry, guarded(&["a"])).await);
        assert_eq!(again, first, "the same request");
    }
    assert_eq!(presented.load(Ordering::SeqCst), 1);
    // Another input is another request, presented once.
    let other = confirmation_id(&call(&registry, guarded(&["b"])).await);
    assert_ne!(other, first);
    assert_eq!(presented.load(Ordering::SeqCst), 2);
}
