//! One truthful settlement per call (AS-IDENT-001, AS-IDENT-004,
//! AS-IDENT-006): a call that waits for the person — in a wait-mode toolset,
//! or held by an adapter in a two-phase toolset (the MCP server's) — is
//! approved, denied, withdrawn, cancelled, dropped or forgotten in any
//! order, and then retried with the same id. Whatever happened, the call
//! settled once, the handler ran at most once, and the retry gets that
//! settlement (or, after its identity was forgotten, a fresh request) —
//! never `INVOCATION_CONFLICT`.

use agent_surface::adapter::{ToolCall, ask_the_person};
use agent_surface::prelude::*;
use agent_surface::toolset::{ExecuteOptions, Toolset, Topology};
use proptest::prelude::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::fixtures::{Probe, code, consumer, guarded_name, registry, settle_tasks};

/// What happens while the call waits for the person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum During {
    Approve,
    Deny,
    /// The component goes away: its requests are withdrawn.
    Withdraw,
    Cancel,
    Drop,
    Forget,
}

/// How the call waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// A wait-mode toolset holds it.
    Wait,
    /// A two-phase toolset's adapter holds it (`ask_the_person`).
    Held,
}

/// What the retry with the same id may get, by what happened first.
fn expected(first: During) -> &'static [Option<ErrorCode>] {
    match first {
        During::Approve => &[None],
        During::Deny | During::Withdraw => &[Some(ErrorCode::ConfirmationInvalid)],
        During::Cancel | During::Drop => &[Some(ErrorCode::Cancelled)],
        // Its identity was forgotten: nothing of it is kept, so the same id
        // is a new request (and asks the person again).
        During::Forget => &[Some(ErrorCode::ConfirmationRequired)],
    }
}

fn toolset(registry: &Registry, mode: Mode) -> Toolset {
    Toolset::builder(registry)
        .consumer(consumer("agent"))
        .topology(match mode {
            Mode::Wait => Topology::Embedded,
            Mode::Held => Topology::Remote,
        })
        .build()
        .expect("a toolset")
}

/// Runs one interleaving; returns a description of what broke, if anything.
async fn interleaving(mode: Mode, events: Vec<During>, evidence: bool) -> Result<(), String> {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).expect("mounts");
    let tools = toolset(&registry, mode);
    let name = guarded_name(&tools);
    let call =
        ToolCall::new(name.clone(), json!({"ids": ["w"]})).invocation_id(Some("call-1".to_owned()));
    let cancel = CancellationToken::new();
    let waiting = {
        let (tools, call, cancel) = (tools.clone(), call.clone(), cancel.clone());
        tokio::spawn(async move {
            match mode {
                Mode::Wait => call.run(&tools, None, cancel).await,
                Mode::Held => {
                    let first = call.run(&tools, None, cancel.clone()).await;
                    let Some(id) = first
                        .error()
                        .and_then(|error| error.detail("confirmationId"))
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_owned)
                    else {
                        return first;
                    };
                    ask_the_person(&tools, &call, &id, std::future::pending(), |_| {}, cancel).await
                }
            }
        })
    };
    settle_tasks().await;
    let pending = registry.confirmations().pending();
    let [asked] = pending.as_slice() else {
        return Err(format!("one request is pending: {pending:?}"));
    };
    let confirmation = asked.confirmation_id.to_string();
    let mut mounted = Some(mounted);
    let mut waiting = Some(waiting);
    let mut settled = None;
    for event in &events {
        match event {
            During::Approve => {
                let _ = registry.confirmations().approve(&asked.shown());
            }
            During::Deny => {
                let _ = registry.confirmations().deny(&asked.shown());
            }
            During::Withdraw => {
                if let Some(gone) = mounted.take() {
                    drop(gone);
                    // Mounted again: the retry finds the capability.
                    mounted = Some(registry.mount(probe.clone()).expect("mounts again"));
                }
            }
            During::Cancel => cancel.cancel(),
            During::Drop => {
                if let Some(task) = waiting.take() {
                    task.abort();
                    let _ = task.await;
                }
            }
            During::Forget => registry.forget_consumer(tools.consumer()),
        }
        settle_tasks().await;
        if settled.is_none()
            && let Some(task) = waiting.take_if(|task| task.is_finished())
        {
            settled = Some(task.await.map_err(|err| err.to_string())?);
        }
    }
    // The first event that ends the wait decides the settlement; once the
    // identity is forgotten (before or after), nothing of it is kept.
    let first = if events.contains(&During::Forget) {
        During::Forget
    } else {
        events[0]
    };
    if let Some(result) = &settled {
        let code = code(result);
        if code == Some(ErrorCode::InvocationConflict) {
            return Err(format!("the waiting call conflicted: {result:?}"));
        }
    }
    let retry = tools
        .execute_with_options(
            &name,
            json!({"ids": ["w"]}),
            ExecuteOptions::new()
                .tool_call_id(Some("call-1"))
                .confirmation_id(evidence.then_some(confirmation.as_str())),
        )
        .await;
    // A wait-mode retry asked the person again: it is still waiting (or
    // settled at once); either way it never conflicts.
    let retried = code(&retry);
    if retried == Some(ErrorCode::InvocationConflict) {
        return Err(format!("the retry conflicted: {retry:?}"));
    }
    if probe.runs() > 1 {
        return Err(format!("the handler ran {} times", probe.runs()));
    }
    // What the retry gets is what the call settled with (a fresh request
    // once its identity was forgotten).
    let truthful = match (&settled, first) {
        // A fresh request: never a replay of what ran (ok) or of the
        // cancellation. (It asks the person again, or reports why it
        // cannot: the evidence it presents was withdrawn, the component
        // it names moved, its wait-mode request expired unanswered.)
        (_, During::Forget) => !matches!(retried, None | Some(ErrorCode::Cancelled)),
        (Some(result), _) => retried == code(result),
        (None, _) => expected(first).contains(&retried),
    };
    if !truthful {
        return Err(format!(
            "after {events:?} the call settled {:?} and the retry got {retried:?}",
            settled.as_ref().map(code)
        ));
    }
    drop(mounted);
    Ok(())
}

fn during() -> impl Strategy<Value = During> {
    prop_oneof![
        Just(During::Approve),
        Just(During::Deny),
        Just(During::Withdraw),
        Just(During::Cancel),
        Just(During::Drop),
        Just(During::Forget),
    ]
}

fn run(cases: u32) {
    let strategy = (
        prop_oneof![Just(Mode::Wait), Just(Mode::Held)],
        proptest::collection::vec(during(), 1..4),
        any::<bool>(),
    );
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases,
        ..proptest::test_runner::Config::default()
    });
    let outcome = runner.run(&strategy, |(mode, events, evidence)| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime");
        runtime
            .block_on(interleaving(mode, events, evidence))
            .map_err(TestCaseError::fail)
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

#[test]
fn as_ident_006_every_interleaving_of_approve_deny_withdraw_cancel_drop_and_forget_settles_once() {
    run(256);
}

#[test]
#[ignore = "10 000 cases; run with --ignored"]
fn as_ident_006_every_interleaving_settles_once_at_length() {
    run(10_000);
}

#[tokio::test(start_paused = true)]
async fn as_ident_001_a_held_call_cancelled_while_the_person_reads_replays_cancelled_to_its_retry()
{
    for during in [During::Cancel, During::Drop] {
        let result = interleaving(Mode::Held, vec![during], false).await;
        assert_eq!(result, Ok(()), "{during:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn as_ident_004_a_waiting_call_whose_identity_is_forgotten_leaves_nothing_to_replay() {
    for mode in [Mode::Wait, Mode::Held] {
        for evidence in [false, true] {
            let result = interleaving(mode, vec![During::Forget], evidence).await;
            assert_eq!(result, Ok(()), "{mode:?}, evidence {evidence}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn as_ident_006_a_retry_with_wrong_evidence_never_strands_the_approved_one() {
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let tools = toolset(&registry, Mode::Held);
    let name = guarded_name(&tools);
    let attempt = |evidence: Option<String>| {
        let (tools, name) = (tools.clone(), name.clone());
        async move {
            tools
                .execute_with_options(
                    &name,
                    json!({"ids": ["w"]}),
                    ExecuteOptions::new()
                        .tool_call_id(Some("call-9"))
                        .confirmation_id(evidence.as_deref()),
                )
                .await
        }
    };
    let asked = attempt(None).await;
    assert_eq!(code(&asked), Some(ErrorCode::ConfirmationRequired));
    let id = crate::fixtures::confirmation_id(&asked);
    // A retry with evidence of nothing: refused, and not kept for the id.
    let wrong = attempt(Some("not-a-confirmation".to_owned())).await;
    assert_eq!(code(&wrong), Some(ErrorCode::ConfirmationInvalid));
    let pending = registry.confirmations().find(&id).unwrap();
    registry.confirmations().approve(&pending.shown()).unwrap();
    let ran = attempt(Some(id)).await;
    assert!(ran.is_ok(), "{ran:?}");
    assert_eq!(probe.runs(), 1);
}
