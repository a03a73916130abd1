//! Who an HTTP request acts as, over raw HTTP (reqwest): only identities
//! the server issued and still holds. A terminated session's records are
//! forgotten and nobody can act as it; stateless callers are distinct
//! consumers whatever session header they send; a live session's
//! notifications survive any amount of other sessions.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::{LEGACY, PATIENCE, payload, serve};
use tokio::sync::watch;

fn confirmation_id(response: &Value) -> String {
    assert_eq!(
        payload(response)["code"],
        "CONFIRMATION_REQUIRED",
        "{response}"
    );
    payload(response)["details"]["confirmationId"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn as_confirm_004_nobody_acts_as_a_terminated_session() {
    let served = serve(|b| b).await;
    let registry = served.app.registry().clone();
    let confirmations = registry.confirmations();
    let session = served.open_session().await;
    served
        .call(
            &session,
            json!(1),
            "view_devices__table__selectRows",
            json!({"ids": ["d2", "d3"]}),
        )
        .await;
    let asked = served
        .call(&session, json!(7), "domain_devices__disable", json!({}))
        .await;
    let confirmation = confirmation_id(&asked);
    served
        .call(
            &session,
            json!("r1"),
            "view_devices__table__readState",
            json!({}),
        )
        .await;
    assert_eq!(
        registry.dedupe_len(),
        2,
        "the session's settled calls are remembered"
    );

    assert!(served.delete(&session).await.is_success());
    support::eventually("the session's confirmation is forgotten", async || {
        confirmations.pending().is_empty()
    })
    .await;
    assert_eq!(registry.dedupe_len(), 0, "its dedupe records are forgotten");
    assert!(
        confirmations.find(&confirmation).is_none(),
        "nothing left to approve"
    );

    // The stateless path ignores the dead session's id: its request ids
    // conflict with nothing, and its evidence executes nothing.
    let dead = [("mcp-session-id", session.as_str())];
    let read = served
        .modern_call(
            json!("r1"),
            "view_devices__table__selectRows",
            json!({"ids": ["d2", "d3"]}),
            &dead,
        )
        .await;
    assert_ne!(payload(&read)["code"], "INVOCATION_CONFLICT", "{read}");
    let replay = served
        .modern(
            json!(7),
            "tools/call",
            json!({"name": "domain_devices__disable", "arguments": {},
                   "_meta": {"agentSurface/confirmationId": confirmation}}),
            &dead,
        )
        .await;
    let replay = replay.response(&json!(7)).unwrap();
    assert_eq!(payload(replay)["code"], "CONFIRMATION_INVALID", "{replay}");
    let state = served
        .modern_call(json!(8), "view_devices__table__readState", json!({}), &[])
        .await;
    let rows = payload(&state)["visibleRows"].as_array().unwrap().clone();
    assert!(
        rows.iter().all(|row| row["status"] != "disabled"
            || !["d2", "d3"].contains(&row["id"].as_str().unwrap())),
        "nothing was disabled: {rows:?}"
    );
    // And the handshake-era path answers the dead id 404 (see mcp_http_gate).
    let reply = served
        .request(&session, json!(9), "tools/list", json!({}))
        .await;
    assert_eq!(reply.status, reqwest::StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn as_ident_004_stateless_callers_are_distinct_consumers_whatever_they_claim() {
    let served = serve(|b| b).await;
    let confirmations = served.app.registry().confirmations();
    let claim = [("mcp-session-id", "shared-guess")];
    served
        .modern_call(
            json!(1),
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
            &claim,
        )
        .await;
    // The same tool, input and JSON-RPC id from two callers claiming the
    // same session: two consumers, two confirmations, no conflict.
    let first = served
        .modern_call(json!(1), "domain_devices__disable", json!({}), &claim)
        .await;
    let second = served
        .modern_call(json!(1), "domain_devices__disable", json!({}), &claim)
        .await;
    assert_ne!(confirmation_id(&first), confirmation_id(&second));
    let consumers: Vec<String> = confirmations
        .pending()
        .iter()
        .map(|p| p.consumer_key.to_string())
        .collect();
    assert_eq!(consumers.len(), 2);
    assert_ne!(consumers[0], consumers[1]);
    assert!(
        consumers
            .iter()
            .all(|c| c.starts_with("mcp:http-") && !c.contains("shared-guess")),
        "{consumers:?}"
    );
}

/// The devices app served with an `identify` hook: the principal is the
/// `x-user` header's value.
async fn serve_principals() -> support::Served {
    serve(|b| {
        b.elicitation(true).identify(|parts| {
            parts
                .headers
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(|user| format!("user-{user}"))
        })
    })
    .await
}

#[tokio::test]
async fn as_ident_004_the_identify_hook_names_the_principal() {
    let served = serve_principals().await;
    let confirmations = served.app.registry().confirmations();
    let ann = [("x-user", "ann")];
    served
        .modern_call(
            json!(1),
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
            &ann,
        )
        .await;
    let first = served
        .modern_call(json!(2), "domain_devices__disable", json!({}), &ann)
        .await;
    // The principal spans requests: the same call is the same confirmation.
    let again = served
        .modern_call(json!(3), "domain_devices__disable", json!({}), &ann)
        .await;
    assert_eq!(confirmation_id(&first), confirmation_id(&again));
    let pending = confirmations.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(&*pending[0].consumer_key, "mcp:user-ann");
}

/// Follows a session's GET stream, counting `tools/list_changed`.
async fn follow(served: &support::Served, session: &str) -> watch::Receiver<usize> {
    let mut response = served
        .client
        .get(&served.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", LEGACY)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let (count, seen) = watch::channel(0_usize);
    let count = Arc::new(count);
    tokio::spawn(async move {
        let mut text = String::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
            let n = text.matches("notifications/tools/list_changed").count();
            count.send_replace(n);
        }
    });
    seen
}

async fn notified(seen: &mut watch::Receiver<usize>, at_least: usize, what: &str) {
    tokio::time::timeout(PATIENCE, seen.wait_for(|n| *n >= at_least))
        .await
        .unwrap_or_else(|_| panic!("no tools/list_changed after {what}"))
        .unwrap();
}

#[tokio::test]
async fn as_adapter_003_a_live_sessions_notifications_survive_any_other_traffic() {
    let served = serve(|b| b).await;
    let live = served.open_session().await;
    let mut seen = follow(&served, &live).await;
    // More sessions come and go than any cache of views holds.
    for _ in 0..1_100 {
        let other = served.open_session().await;
        assert!(served.delete(&other).await.is_success());
    }
    // The live session's own call changes its tools: notified.
    let before = *seen.borrow();
    served
        .call(
            &live,
            json!(1),
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
        )
        .await;
    notified(&mut seen, before + 1, "its own selection").await;
    assert!(
        served
            .tools(&live)
            .await
            .contains(&"domain_devices__disable".to_owned())
    );
    // Another session changes the surface (navigation unmounts the page):
    // notified too.
    let before = *seen.borrow();
    let other = served.open_session().await;
    served
        .call(
            &other,
            json!(1),
            "view_app__navigation__goTo",
            json!({"route": "/settings"}),
        )
        .await;
    notified(&mut seen, before + 1, "another session's navigation").await;
}

/// A stateless `tools/call` of the disable declaring elicitation support,
/// as `headers`' caller: the input-required answer.
async fn ask_with_elicitation(
    served: &support::Served,
    id: u64,
    headers: &[(&str, &str)],
) -> Value {
    served
        .modern_call(
            json!(id),
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
            headers,
        )
        .await;
    let reply = served
        .modern(
            json!(id + 1),
            "tools/call",
            json!({"name": "domain_devices__disable", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}),
            headers,
        )
        .await;
    reply.response(&json!(id + 1)).cloned().unwrap()
}

/// The retry answering input request `state` with an approval, as
/// `headers`' caller.
async fn answer(served: &support::Served, id: u64, state: &str, headers: &[(&str, &str)]) -> Value {
    let reply = served
        .modern(
            json!(id),
            "tools/call",
            json!({"name": "domain_devices__disable", "arguments": {},
                   "requestState": state,
                   "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
                   "inputResponses": {"agentSurface/confirm": {"action": "accept", "content": {"approve": true}}}}),
            headers,
        )
        .await;
    reply.response(&json!(id)).cloned().unwrap()
}

#[tokio::test]
async fn as_confirm_004_an_input_request_is_answerable_only_by_the_caller_it_was_sent_to() {
    // Anonymous stateless callers: the state is a fresh secret, never the
    // confirmation id another caller could learn (from the page, the audit).
    let served = serve(|b| b.elicitation(true)).await;
    let confirmations = served.app.registry().confirmations();
    let asked = ask_with_elicitation(&served, 1, &[]).await;
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let pending = confirmations.pending();
    assert_eq!(pending.len(), 1, "{asked}");
    let id = pending[0].confirmation_id.to_string();
    assert_ne!(state, id, "the state is not the confirmation id");
    let by_id = answer(&served, 3, &id, &[]).await;
    assert!(by_id.get("error").is_some(), "{by_id}");
    assert_eq!(confirmations.pending().len(), 1, "nothing was resolved");
    let done = answer(&served, 4, &state, &[]).await;
    assert_eq!(payload(&done), &json!({"disabled": 1}), "{done}");
    let resolution = confirmations.resolution(&id).unwrap();
    assert_eq!(resolution.channel.as_deref(), Some("mcp-elicitation"));

    // Principals: the state is bound to the principal it was sent to.
    let served = serve_principals().await;
    let confirmations = served.app.registry().confirmations();
    let asked = ask_with_elicitation(&served, 1, &[("x-user", "ann")]).await;
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    for stranger in [&[("x-user", "bob")][..], &[][..]] {
        let stolen = answer(&served, 3, &state, stranger).await;
        assert!(stolen.get("error").is_some(), "{stolen}");
        assert_eq!(confirmations.pending().len(), 1, "nothing was resolved");
    }
    assert!(served.app.server().received().is_empty());
    let done = answer(&served, 4, &state, &[("x-user", "ann")]).await;
    assert_eq!(payload(&done), &json!({"disabled": 1}), "{done}");
}

#[tokio::test]
async fn as_confirm_005_stateless_callers_in_numbers_never_push_out_a_principals_input_request() {
    // A principal is asked; then 300 stateless callers (one party, however
    // many) are asked too — more rounds than the server keeps. Their rounds
    // push out only their own: the principal's answer still resolves its
    // request, once.
    let served = serve_principals().await;
    let ann = [("x-user", "ann")];
    let asked = ask_with_elicitation(&served, 1, &ann).await;
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    for n in 0..300 {
        let _ = ask_with_elicitation(&served, 10 + 2 * n, &[]).await;
    }
    let done = answer(&served, 1_000, &state, &ann).await;
    assert_eq!(payload(&done), &json!({"disabled": 1}), "{done}");
}

/// A replica: the devices app on a registry sharing `store`, served at
/// `/mcp` with elicitation on.
async fn replica(store: &Arc<dyn agent_surface::store::SharedStore>) -> support::Served {
    use agent_surface::mcp::McpServer;
    let namespace = agent_surface::store::Namespace::new("devices").unwrap();
    let registry = devices::registry_for(&support::User::admin(), |builder| {
        builder.shared_store(Arc::clone(store), namespace)
    });
    let app = support::App::attach(registry, support::User::admin())
        .await
        .unwrap();
    let server = McpServer::builder(app.registry())
        .name("devices")
        .elicitation(true)
        .build();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = http.url();
    support::Served {
        app,
        server,
        http,
        raw: support::raw_mcp::RawMcp::new(url),
    }
}

#[tokio::test]
async fn as_confirm_003_an_input_request_is_answered_on_whichever_replica_the_retry_lands() {
    let store: Arc<dyn agent_surface::store::SharedStore> =
        Arc::new(agent_surface::store::MemoryStore::new());
    let (a, b) = (replica(&store).await, replica(&store).await);
    // Each replica's page has its own selection: the same rows on both.
    a.modern_call(
        json!(90),
        "view_devices__table__selectRows",
        json!({"ids": ["d2"]}),
        &[],
    )
    .await;
    // Asked on replica B…
    let asked = ask_with_elicitation(&b, 1, &[]).await;
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let pending = b.app.registry().confirmations().pending();
    assert_eq!(pending.len(), 1, "{asked}");
    let id = pending[0].confirmation_id.to_string();
    // …the answering retry lands on replica A: answered there, run there,
    // once.
    let done = answer(&a, 4, &state, &[]).await;
    assert_eq!(payload(&done), &json!({"disabled": 1}), "{done}");
    let resolution = b.app.registry().confirmations().resolution(&id).unwrap();
    assert_eq!(resolution.channel.as_deref(), Some("mcp-elicitation"));
    assert!(b.app.registry().confirmations().pending().is_empty());
    // The state answers once, on any replica; the approval is used.
    for (on, served) in [("A", &a), ("B", &b)] {
        let again = answer(served, 5, &state, &[]).await;
        assert!(
            again.get("error").is_some() || payload(&again)["code"] != json!(null),
            "replica {on} ran it again: {again}"
        );
        assert_ne!(payload(&again), &json!({"disabled": 1}), "replica {on}");
    }
    // A forged state naming the request answers nothing.
    let asked = ask_with_elicitation(&b, 10, &[]).await;
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let (_, named) = state.rsplit_once('.').unwrap();
    let forged = format!("rs_{}.{named}", "0".repeat(32));
    let refused = answer(&a, 12, &forged, &[]).await;
    assert!(refused.get("error").is_some(), "{refused}");
    assert_eq!(b.app.registry().confirmations().pending().len(), 1);
}

#[tokio::test]
async fn as_confirm_004_a_mismatched_answer_on_another_replica_leaves_the_round_to_its_caller() {
    let store: Arc<dyn agent_surface::store::SharedStore> =
        Arc::new(agent_surface::store::MemoryStore::new());
    let (a, b) = (replica(&store).await, replica(&store).await);
    a.modern_call(
        json!(90),
        "view_devices__table__selectRows",
        json!({"ids": ["d2"]}),
        &[],
    )
    .await;
    let asked = ask_with_elicitation(&b, 1, &[]).await;
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    // The state with other arguments, on A: refused, and nothing taken…
    let reply = a
        .modern(
            json!(3),
            "tools/call",
            json!({"name": "domain_devices__disable", "arguments": {"other": 1},
                   "requestState": state,
                   "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
                   "inputResponses": {"agentSurface/confirm": {"action": "accept", "content": {"approve": true}}}}),
            &[],
        )
        .await;
    let refused = reply.response(&json!(3)).cloned().unwrap();
    assert!(refused.get("error").is_some(), "{refused}");
    // …so the caller's own answer on A still works.
    let done = answer(&a, 4, &state, &[]).await;
    assert_eq!(payload(&done), &json!({"disabled": 1}), "{done}");
}
