//! The documented explicit two-phase retry over MCP, end to end with rmcp's
//! own client: a call answers `CONFIRMATION_REQUIRED`, the user approves
//! (here, the host's confirmation controller), and the model calls again
//! with `_meta["agentSurface/confirmationId"]` — over the stdio transport
//! (newline-delimited JSON on a byte stream) and over streamable HTTP, in
//! both protocol generations. On stateless HTTP every request is a new
//! consumer, so only the presented id can carry the retry.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod support;

use agent_surface::mcp::{CONFIRMATION_META, McpServer};
use rmcp::model::{CallToolRequestParams, ProtocolVersion, RequestMetaObject};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Value, json};
use support::{App, User};

type Client = RunningService<RoleClient, ()>;

fn lifecycle(modern: bool) -> ClientLifecycleMode {
    if modern {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        }
    } else {
        ClientLifecycleMode::Initialize
    }
}

/// Calls `name`, presenting `evidence` in the request `_meta` if given;
/// the structured payload.
async fn call(client: &Client, name: &str, arguments: Value, evidence: Option<&str>) -> Value {
    let mut params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    if let Some(id) = evidence {
        let mut meta = RequestMetaObject::default();
        meta.0.0.insert(CONFIRMATION_META.to_owned(), json!(id));
        params.meta = Some(meta);
    }
    let result = client.call_tool(params).await.unwrap();
    result.structured_content.unwrap_or(Value::Null)
}

/// The whole journey on one client: asked, approved, retried with the id
/// (executes once), replayed (consumed), and evidence for other input
/// (mismatch, never executed).
async fn two_phase_journey(app: &App, client: &Client) {
    let confirmations = app.registry().confirmations();
    call(
        client,
        "view_devices__table__selectRows",
        json!({"ids": ["d2", "d3"]}),
        None,
    )
    .await;
    let asked = call(
        client,
        "domain_devices__disable",
        json!({"reason": "cleanup"}),
        None,
    )
    .await;
    assert_eq!(asked["code"], "CONFIRMATION_REQUIRED", "{asked}");
    assert_eq!(asked["retry"], "with-confirmation");
    let id = asked["details"]["confirmationId"]
        .as_str()
        .unwrap()
        .to_owned();

    confirmations
        .approve(&confirmations.find(&id).unwrap().shown())
        .unwrap();
    let done = call(
        client,
        "domain_devices__disable",
        json!({"reason": "cleanup"}),
        Some(&id),
    )
    .await;
    assert_eq!(done, json!({"disabled": 2}), "the approved retry executes");

    // Single use: the same evidence again is refused, not a new question.
    let replay = call(
        client,
        "domain_devices__disable",
        json!({"reason": "cleanup"}),
        Some(&id),
    )
    .await;
    assert_eq!(replay["code"], "CONFIRMATION_INVALID", "{replay}");
    assert_eq!(replay["details"]["reason"], "consumed");

    // Evidence for one input never runs another.
    call(
        client,
        "view_devices__table__selectRows",
        json!({"ids": ["d4"]}),
        None,
    )
    .await;
    let asked = call(
        client,
        "domain_devices__disable",
        json!({"reason": "one"}),
        None,
    )
    .await;
    let other = asked["details"]["confirmationId"]
        .as_str()
        .unwrap()
        .to_owned();
    confirmations
        .approve(&confirmations.find(&other).unwrap().shown())
        .unwrap();
    let mismatch = call(
        client,
        "domain_devices__disable",
        json!({"reason": "two"}),
        Some(&other),
    )
    .await;
    assert_eq!(mismatch["code"], "CONFIRMATION_INVALID", "{mismatch}");
    assert_eq!(mismatch["details"]["reason"], "mismatch");
}

async fn over_stdio(modern: bool) {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let (client_io, server_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve_with_lifecycle(client_io, lifecycle(modern)).await.unwrap();
    two_phase_journey(&app, &client).await;
    client.cancel().await.unwrap();
}

async fn over_http(modern: bool) {
    let served = support::serve(|b| b).await;
    let transport = StreamableHttpClientTransport::from_uri(served.url.clone());
    let client = ().serve_with_lifecycle(transport, lifecycle(modern)).await.unwrap();
    two_phase_journey(&served.app, &client).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn as_ident_006_the_explicit_retry_executes_once_over_stdio() {
    over_stdio(false).await;
}

#[tokio::test]
async fn as_ident_006_the_explicit_retry_executes_once_over_stdio_2026_07_28() {
    over_stdio(true).await;
}

#[tokio::test]
async fn as_ident_006_the_explicit_retry_executes_once_over_http_sessions() {
    over_http(false).await;
}

#[tokio::test]
async fn as_ident_006_the_explicit_retry_executes_once_over_stateless_http() {
    over_http(true).await;
}

#[tokio::test]
async fn as_confirm_005_anonymous_callers_hold_a_bounded_number_of_confirmations() {
    let served = support::serve(|b| b).await;
    let registry = served.app.registry().clone();
    let cap = registry.limits().max_pending_confirmations_per_consumer;
    served
        .modern_call(
            json!(0),
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
            &[],
        )
        .await;
    let mut ids = Vec::new();
    for n in 0..=cap {
        let asked = served
            .modern_call(
                json!(n + 1),
                "domain_devices__disable",
                json!({"reason": format!("r{n}")}),
                &[],
            )
            .await;
        let payload = support::payload(&asked);
        assert_eq!(payload["code"], "CONFIRMATION_REQUIRED", "{asked}");
        ids.push(
            payload["details"]["confirmationId"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let pending: Vec<String> = registry
        .confirmations()
        .pending()
        .iter()
        .map(|p| p.confirmation_id.to_string())
        .collect();
    assert_eq!(
        pending.len(),
        cap,
        "anonymous callers together hold at most the cap"
    );
    assert!(!pending.contains(&ids[0]), "the oldest gave way");
    assert!(pending.contains(&ids[cap]));
}

#[tokio::test]
async fn as_confirm_005_one_client_opening_sessions_cannot_starve_another_session() {
    let served = support::serve(|b| b.max_sessions(16)).await;
    let registry = served.app.registry().clone();
    let limits = registry.limits();
    let share = limits.max_pending_confirmations_per_consumer;
    let ask = async |session: &str, n: usize| {
        let asked = served
            .call(
                session,
                json!(format!("ask-{n}")),
                "domain_devices__disable",
                json!({"reason": format!("reason {n}")}),
            )
            .await;
        support::payload(&asked)["code"].clone()
    };
    // One client opens session after session and asks and asks: the
    // sessions are one party (unauthenticated), which holds one share of
    // the pending list, never the list.
    let mut n = 0;
    let mut sessions = Vec::new();
    for _ in 0..4 {
        let session = served.open_session().await;
        served
            .call(
                &session,
                json!("select"),
                "view_devices__table__selectRows",
                json!({"ids": ["d2"]}),
            )
            .await;
        // Each new session's first request is served (one holding more
        // makes room); past its fair part, it waits.
        for k in 0..share {
            n += 1;
            let code = ask(&session, n).await;
            if k == 0 {
                assert_eq!(code, "CONFIRMATION_REQUIRED");
            } else {
                assert!(
                    code == "CONFIRMATION_REQUIRED" || code == "RATE_LIMITED",
                    "{code}"
                );
            }
        }
        sessions.push(session);
        assert!(registry.confirmations().pending().len() <= share);
    }
    let pending = registry.confirmations().pending();
    assert_eq!(pending.len(), share, "one share, not the list");
    // Inside the share the sessions took turns: each holds a part.
    let holders: std::collections::BTreeSet<&str> =
        pending.iter().map(|p| &*p.consumer_key).collect();
    assert_eq!(holders.len(), sessions.len(), "{holders:?}");
    // Another session's first request is still served: the session holding
    // the most made room.
    let other = served.open_session().await;
    assert_eq!(ask(&other, n + 1).await, "CONFIRMATION_REQUIRED");
    assert_eq!(registry.confirmations().pending().len(), share);
}
