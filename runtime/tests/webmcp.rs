//! The WebMCP adapter without a browser: a page agent
//! (`agent_surface::webmcp::PageAgent`) over the devices console, fed the
//! page's messages as the page glue sends them (AS-ADAPTER-003: it
//! registers only what the in-page agent may use now and follows the
//! surface; every call runs through the pipeline; the person answers).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // test code

mod support;

use std::time::Duration;

use agent_surface::webmcp::{MAX_CALLS_IN_FLIGHT, PageAgent, PageMessage};
use devices::components::Route;
use serde_json::{Value, json};
use support::{App, User};

const DISABLE: &str = "domain_devices__disable";
const SELECT: &str = "view_devices__table__selectRows";

fn names(message: &Value) -> Vec<String> {
    assert_eq!(message["type"], "tools");
    message["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

fn call(number: u64, name: &str, arguments: Value) -> Value {
    json!({"type": "call", "call": number, "name": name, "arguments": arguments})
}

async fn run(agent: &PageAgent, message: Value) -> Value {
    agent.receive(&message).expect("a call").await
}

#[tokio::test]
async fn as_adapter_003_webmcp_lists_only_what_the_in_page_agent_may_use_and_follows_the_surface() {
    let app = App::start(User::admin()).await.unwrap();
    let agent = PageAgent::new(app.registry(), "tab-1", "In-page agent").unwrap();
    let tools = names(&agent.tools_message());
    assert!(tools.iter().any(|t| t == SELECT), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == DISABLE),
        "nothing selected: {tools:?}"
    );
    // Entries are what registerTool takes: a schema, a description, hints.
    let entry = agent.tools_message()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == SELECT)
        .cloned()
        .unwrap();
    assert_eq!(entry["inputSchema"]["type"], "object");
    assert!(entry["description"].as_str().unwrap().len() > 10);
    assert_eq!(entry["annotations"]["readOnlyHint"], false);

    // A selection (the person's, here the console's) brings disable; the
    // watcher says the list changed.
    let since = agent.mark();
    let (mut watcher, due) = agent.watch(since);
    assert!(!due);
    let selected = run(&agent, call(1, SELECT, json!({"ids": ["d2"]}))).await;
    assert_eq!(selected["result"]["isError"], false, "{selected}");
    tokio::time::timeout(Duration::from_secs(5), watcher.changed())
        .await
        .expect("a change")
        .unwrap();
    assert!(names(&agent.tools_message()).iter().any(|t| t == DISABLE));

    // Leaving the devices page takes the device tools away.
    app.console().navigate(Route::Settings);
    tokio::time::timeout(Duration::from_secs(5), watcher.changed())
        .await
        .expect("a change")
        .unwrap();
    let tools = names(&agent.tools_message());
    assert!(
        !tools.iter().any(|t| t == SELECT || t == DISABLE),
        "{tools:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn as_adapter_003_webmcp_never_lists_a_hidden_capability_and_calling_it_is_not_found() {
    let app = App::start(User::viewer()).await.unwrap();
    let agent = PageAgent::new(app.registry(), "tab-1", "In-page agent").unwrap();
    run(&agent, call(0, SELECT, json!({"ids": ["d2"]}))).await;
    assert!(!names(&agent.tools_message()).iter().any(|t| t == DISABLE));
    let hidden = run(&agent, call(1, DISABLE, json!({}))).await;
    let missing = run(&agent, call(2, "domain_devices__nothingHere", json!({}))).await;
    assert_eq!(hidden["result"]["isError"], true);
    // Indistinguishable from a capability that does not exist.
    let (h, m) = (
        &hidden["result"]["structuredContent"],
        &missing["result"]["structuredContent"],
    );
    assert_eq!(h["code"], m["code"], "{h} vs {m}");
    assert_eq!(h["retry"], m["retry"]);
    assert_eq!(h["details"], m["details"]);
    app.stop().await;
}

#[tokio::test]
async fn as_adapter_003_webmcp_calls_run_through_the_pipeline_with_the_exact_payload() {
    let app = App::start(User::admin()).await.unwrap();
    let agent = PageAgent::new(app.registry(), "tab-1", "In-page agent").unwrap();
    let ok = run(&agent, call(7, SELECT, json!({"ids": ["d1"]}))).await;
    assert_eq!(ok["type"], "result");
    assert_eq!(ok["call"], 7);
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert_eq!(app.console().selected(), vec!["d1".to_owned()]);
    // What the browser never checks, the pipeline does.
    for bad in [
        json!({"nope": 1}),
        json!({"ids": "d1"}),
        json!([1, 2]),
        json!("text"),
    ] {
        let refused = run(&agent, call(8, SELECT, bad.clone())).await;
        let payload = &refused["result"]["structuredContent"];
        assert_eq!(refused["result"]["isError"], true, "{bad}");
        assert_eq!(payload["code"], "INVALID_INPUT", "{bad}: {payload}");
        assert!(payload["message"].is_string() && payload["retry"].is_string());
        // The text content is the same payload, for clients that read text.
        let text: Value =
            serde_json::from_str(refused["result"]["content"][0]["text"].as_str().unwrap())
                .unwrap();
        assert_eq!(&text, payload);
    }
    // Audit names the in-page agent.
    let audited = app.registry().audit_log();
    assert!(
        audited.iter().any(|event| event
            .consumer_id
            .as_deref()
            .is_some_and(|id| id.contains("tab-1"))),
        "no audit record for the page agent: {audited:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn as_adapter_003_webmcp_a_confirmation_waits_for_the_person_and_the_agent_cannot_answer() {
    let app = App::start(User::admin()).await.unwrap();
    let agent = PageAgent::new(app.registry(), "tab-1", "In-page agent").unwrap();
    run(&agent, call(0, SELECT, json!({"ids": ["d2", "d3"]}))).await;
    let disable = tokio::spawn(run_owned(agent.clone(), call(1, DISABLE, json!({}))));
    let confirmations = app.registry().confirmations();
    let pending = wait_for_pending(&app).await;
    assert_eq!(pending.consumer_key.as_ref(), "webmcp:tab-1");
    assert_eq!(pending.requester.as_deref(), Some("In-page agent"));
    // Nothing the page agent can send answers it: evidence in the
    // arguments is refused by the schema, other messages do nothing.
    let smuggled = run(
        &agent,
        call(
            2,
            DISABLE,
            json!({"confirmationId": pending.confirmation_id.as_ref()}),
        ),
    )
    .await;
    assert_eq!(
        smuggled["result"]["structuredContent"]["code"],
        "INVALID_INPUT"
    );
    for message in [
        json!({"type": "approve", "confirmationId": pending.confirmation_id.as_ref()}),
        json!({"type": "result", "call": 1, "result": {"isError": false}}),
        json!({"type": "ready"}),
    ] {
        assert!(agent.receive(&message).is_none());
    }
    assert!(
        confirmations.find(&pending.confirmation_id).is_some(),
        "still waiting"
    );
    assert!(!disable.is_finished());
    assert!(app.backend().get("d2").unwrap().status != support::Status::Disabled);
    // The person approves: the held call completes with the action's result.
    approve_and_see_d2_disabled(&app, &pending, disable).await;
    app.stop().await;
}

#[tokio::test]
async fn as_adapter_003_webmcp_cancel_withdraws_the_request_and_ending_the_page_forgets_the_agent()
{
    let app = App::start(User::admin()).await.unwrap();
    let agent = PageAgent::new(app.registry(), "tab-1", "In-page agent").unwrap();
    run(&agent, call(1000, SELECT, json!({"ids": ["d2"]}))).await;
    let disable = tokio::spawn(run_owned(agent.clone(), call(1, DISABLE, json!({}))));
    let pending = wait_for_pending(&app).await;
    assert!(
        agent
            .receive(&json!({"type": "cancel", "call": 1}))
            .is_none()
    );
    let result = tokio::time::timeout(Duration::from_secs(5), disable)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        result["result"]["structuredContent"]["code"], "CANCELLED",
        "{result}"
    );
    assert!(
        app.registry()
            .confirmations()
            .find(&pending.confirmation_id)
            .is_none()
    );

    // A call waiting when the page goes: withdrawn with the page agent.
    let again = tokio::spawn(run_owned(agent.clone(), call(2, DISABLE, json!({}))));
    let pending = wait_for_pending(&app).await;
    again.abort();
    let _ = again.await;
    drop(agent);
    assert!(
        app.registry()
            .confirmations()
            .find(&pending.confirmation_id)
            .is_none()
    );
    app.stop().await;
}

#[tokio::test]
async fn as_adapter_003_webmcp_calls_in_flight_are_bounded_and_bad_messages_ignored() {
    let app = App::start(User::admin()).await.unwrap();
    let agent = PageAgent::new(app.registry(), "tab-1", "In-page agent").unwrap();
    run(&agent, call(1000, SELECT, json!({"ids": ["d2"]}))).await;
    let mut held = Vec::new();
    for number in 0..MAX_CALLS_IN_FLIGHT as u64 {
        let call = agent.receive(&call(number, DISABLE, json!({}))).unwrap();
        held.push(tokio::spawn(call));
    }
    tokio::task::yield_now().await;
    let refused = run(&agent, call(99, DISABLE, json!({}))).await;
    assert_eq!(
        refused["result"]["structuredContent"]["code"], "RATE_LIMITED",
        "{refused}"
    );
    // A call number already in flight is refused the same way.
    let reused = run(&agent, call(0, SELECT, json!({"ids": ["d1"]}))).await;
    assert_eq!(
        reused["result"]["structuredContent"]["code"],
        "RATE_LIMITED"
    );
    for task in &held {
        task.abort();
    }
    for task in held {
        let _ = task.await;
    }
    // Room again once they ended.
    let ok = run(&agent, call(100, SELECT, json!({"ids": ["d1"]}))).await;
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    // Arguments the page would not send: the call alone comes, refused as
    // the pipeline refuses a large input.
    let large = run(
        &agent,
        json!({"type": "call", "call": 101, "name": SELECT, "tooLarge": true}),
    )
    .await;
    let payload = &large["result"]["structuredContent"];
    assert_eq!(payload["code"], "INVALID_INPUT", "{large}");
    assert!(
        payload["details"]["issues"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("is larger than"),
        "{payload}"
    );
    assert_eq!(
        agent.tools_message()["maxArgumentBytes"],
        json!(app.registry().limits().max_input_bytes * 2)
    );
    // Nor arguments nesting deeper than one over the pipeline's depth
    // (the glue sends `tooDeep` instead: no converter walks them).
    assert_eq!(
        agent.tools_message()["maxArgumentDepth"],
        json!(app.registry().limits().max_input_depth + 1)
    );
    // What the page may not send is ignored, never a panic.
    let long = "x".repeat(10_000);
    for message in [
        json!(null),
        json!({"type": "call"}),
        json!({"type": "call", "call": -1, "name": SELECT}),
        json!({"type": "call", "call": 1.5, "name": SELECT}),
        json!({"type": "call", "call": 1, "name": long}),
        json!({"type": "cancel", "call": "one"}),
        json!({"type": 5}),
    ] {
        assert!(agent.receive(&message).is_none(), "{message}");
    }
    assert_eq!(
        PageMessage::parse(&json!({"type": "absent"}), 64),
        Some(PageMessage::Absent)
    );
    app.stop().await;
}

async fn run_owned(agent: PageAgent, message: Value) -> Value {
    agent.receive(&message).expect("a call").await
}

/// The person approves `pending`: the held disable call completes with
/// the action's result, and d2 is disabled.
async fn approve_and_see_d2_disabled(
    app: &App,
    pending: &agent_surface::confirmation::PendingConfirmation,
    disable: tokio::task::JoinHandle<Value>,
) {
    let confirmations = app.registry().confirmations();
    confirmations
        .approve(
            &confirmations
                .find(&pending.confirmation_id)
                .unwrap()
                .shown(),
        )
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), disable)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(
        app.backend().get("d2").unwrap().status,
        support::Status::Disabled
    );
}

async fn wait_for_pending(app: &App) -> agent_surface::confirmation::PendingConfirmation {
    let confirmations = app.registry().confirmations();
    for _ in 0..500 {
        if let Some(pending) = confirmations.pending().into_iter().next() {
            return pending;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no confirmation was asked");
}

#[tokio::test]
async fn as_adapter_003_webmcp_a_change_is_not_lost_when_the_wait_for_it_is_interrupted() {
    // The page's serving loop waits for a change beside the page's
    // messages and call results: whichever comes first interrupts the
    // other. A change the interrupted wait had already seen must still be
    // reported by the next wait, or the page keeps a stale tool list.
    let app = App::start(User::admin()).await.unwrap();
    let agent = PageAgent::new(app.registry(), "tab-1", "In-page agent").unwrap();
    let (mut watcher, due) = agent.watch(agent.mark());
    assert!(!due);
    app.console().navigate(Route::Settings);
    // Interrupted after its first poll (a call result came first).
    {
        let mut wait = Box::pin(watcher.changed());
        let first = std::future::poll_fn(|cx| std::task::Poll::Ready(wait.as_mut().poll(cx))).await;
        assert!(first.is_pending());
    }
    tokio::time::timeout(Duration::from_secs(5), watcher.changed())
        .await
        .expect("the change is still reported")
        .unwrap();
    assert!(!names(&agent.tools_message()).iter().any(|t| t == SELECT));
    app.stop().await;
}

#[tokio::test]
async fn as_adapter_003_webmcp_a_stale_name_waits_for_the_person_as_its_tool_does() {
    // `…_at_<instance>` names the disable procedure as a current name does
    // on a surface where its instance is unambiguous: not in the agent's
    // tools, so run as a stale name — and it must wait for the person,
    // never leave a request in the dialog that nobody waits for.
    let app = App::start(User::admin()).await.unwrap();
    let agent = PageAgent::new(app.registry(), "tab-1", "In-page agent").unwrap();
    run(&agent, call(0, SELECT, json!({"ids": ["d2"]}))).await;
    let snapshot = app
        .registry()
        .snapshot(&agent_surface::snapshot::SnapshotOptions::default());
    let instance = snapshot.procedures()[0].instance_id().to_owned();
    let name = format!("{DISABLE}_at_{instance}");
    assert!(!names(&agent.tools_message()).contains(&name));
    let disable = tokio::spawn(run_owned(agent.clone(), call(1, &name, json!({}))));
    let pending = wait_for_pending(&app).await;
    assert!(!disable.is_finished(), "the call waits for the person");
    approve_and_see_d2_disabled(&app, &pending, disable).await;
    app.stop().await;
}

#[tokio::test]
async fn as_adapter_003_webmcp_a_call_dropped_before_it_ran_gives_its_place_back() {
    let app = App::start(User::admin()).await.unwrap();
    let agent = PageAgent::new(app.registry(), "tab-1", "In-page agent").unwrap();
    for number in 0..MAX_CALLS_IN_FLIGHT as u64 * 2 {
        // The host drops the call (its connection went, a select lost)
        // before its first poll.
        drop(
            agent
                .receive(&call(number, SELECT, json!({"ids": ["d1"]})))
                .unwrap(),
        );
    }
    let after = run(&agent, call(1_000, SELECT, json!({"ids": ["d1"]}))).await;
    assert_eq!(after["result"]["isError"], false, "{after}");
    app.stop().await;
}
