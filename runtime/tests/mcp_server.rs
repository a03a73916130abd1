//! The MCP server adapter with rmcp's own client, over in-process duplex
//! streams: both protocol generations, list_changed delivery, error
//! payloads, elicitation, staleness. AS-ADAPTER-003 for this adapter: only
//! available capabilities are served, and the list follows the surface.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)] // test code

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::mcp::{McpServer, McpServerBuilder};
use devices::components::Route;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ProtocolVersion, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, ServiceExt,
};
use serde_json::{Value, json};
use support::{App, Status, User};
use tokio::sync::watch;

/// A client that counts list_changed pushes and answers elicitations.
#[derive(Clone)]
struct Probe {
    changed: Arc<watch::Sender<u64>>,
    approve: Option<bool>,
    asked: Arc<Mutex<Vec<String>>>,
    /// Never answers an elicitation (its person walked away).
    silent: bool,
    /// The server's requests the server withdrew.
    withdrawn: Arc<Mutex<Vec<rmcp::model::RequestId>>>,
}

impl Probe {
    fn new(approve: Option<bool>) -> Probe {
        Probe {
            changed: Arc::new(watch::channel(0).0),
            approve,
            asked: Arc::default(),
            silent: false,
            withdrawn: Arc::default(),
        }
    }
}

impl ClientHandler for Probe {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        if self.approve.is_some() {
            config.capabilities = ClientCapabilities::builder().enable_elicitation().build();
        }
        config
    }

    async fn on_cancelled(
        &self,
        params: rmcp::model::CancelledNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(id) = params.request_id {
            self.withdrawn.lock().unwrap().push(id);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.send_modify(|n| *n += 1);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        if self.silent {
            std::future::pending::<()>().await;
        }
        let mut result = ElicitResult::new(if self.approve == Some(true) {
            ElicitationAction::Accept
        } else {
            ElicitationAction::Decline
        });
        if self.approve == Some(true) {
            result.content = Some(json!({"approve": true}));
        }
        Ok(result)
    }
}

struct Connected {
    app: App,
    client: RunningService<RoleClient, Probe>,
    probe: Probe,
}

async fn connect(modern: bool, approve: Option<bool>) -> Connected {
    connect_with(modern, Probe::new(approve)).await
}

async fn connect_with(modern: bool, probe: Probe) -> Connected {
    connect_tuned(modern, probe, |b| b.elicitation(true)).await
}

/// [`connect_with`] with the builder adjusted by `tune` (the host's
/// choices: these tests opt into elicitation unless they say otherwise).
async fn connect_tuned(
    modern: bool,
    probe: Probe,
    tune: impl FnOnce(McpServerBuilder) -> McpServerBuilder,
) -> Connected {
    let app = App::start(User::admin()).await.unwrap();
    let server = tune(McpServer::builder(app.registry()).name("devices")).build();
    let (client_io, server_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let lifecycle = if modern {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        }
    } else {
        ClientLifecycleMode::Initialize
    };
    let client = probe
        .clone()
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .expect("the MCP handshake");
    Connected { app, client, probe }
}

async fn tool_names(client: &RunningService<RoleClient, Probe>) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect()
}

async fn call(
    client: &RunningService<RoleClient, Probe>,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    client
        .call_tool(
            CallToolRequestParams::new(name.to_owned())
                .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
        )
        .await
        .unwrap()
}

fn payload(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

#[tokio::test]
async fn as_adapter_003_only_available_capabilities_are_served_and_the_list_follows_the_surface() {
    for modern in [false, true] {
        let connected = connect(modern, None).await;
        let client = &connected.client;
        // 2026-07-28: list_changed comes on a subscriptions/listen stream.
        let mut subscription = if modern {
            Some(
                client
                    .listen(SubscriptionFilter::builder().tools_list_changed().build())
                    .await
                    .unwrap(),
            )
        } else {
            None
        };
        let tools = tool_names(client).await;
        assert!(tools.contains(&"view_devices__table__selectRows".to_owned()));
        assert!(
            !tools.contains(&"domain_devices__disable".to_owned()),
            "unavailable: not served"
        );
        assert!(
            !tools.contains(&"view_devices__drawer__close".to_owned()),
            "unavailable: not served"
        );

        let mut pushed = connected.probe.changed.subscribe();
        pushed.mark_unchanged();
        let selected = call(
            client,
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
        )
        .await;
        assert_ne!(selected.is_error, Some(true));
        match &mut subscription {
            Some(subscription) => {
                let event = tokio::time::timeout(Duration::from_secs(5), subscription.next())
                    .await
                    .unwrap()
                    .unwrap();
                assert!(event.is_some());
            }
            None => {
                tokio::time::timeout(Duration::from_secs(5), pushed.changed())
                    .await
                    .unwrap()
                    .unwrap();
            }
        }
        assert!(
            tool_names(client)
                .await
                .contains(&"domain_devices__disable".to_owned())
        );

        // A surface change made by the application itself, not by a call.
        let mut pushed = connected.probe.changed.subscribe();
        pushed.mark_unchanged();
        connected.app.console().navigate(Route::Settings);
        match &mut subscription {
            Some(subscription) => {
                tokio::time::timeout(Duration::from_secs(5), subscription.next())
                    .await
                    .unwrap()
                    .unwrap();
            }
            None => {
                tokio::time::timeout(Duration::from_secs(5), pushed.changed())
                    .await
                    .unwrap()
                    .unwrap();
            }
        }
        let tools = tool_names(client).await;
        assert!(
            tools.iter().all(|name| !name.starts_with("view_devices")),
            "{tools:?}"
        );
        connected.app.stop().await;
    }
}

#[tokio::test]
async fn results_carry_the_exact_payload_and_unknown_tools_are_protocol_errors() {
    let connected = connect(false, None).await;
    let client = &connected.client;
    let ok = call(
        client,
        "view_devices__filters__set",
        json!({"status": "offline", "city": "Milan"}),
    )
    .await;
    assert_eq!(payload(&ok), json!({"status": "offline", "city": "Milan"}));
    let invalid = call(
        client,
        "view_devices__table__selectRows",
        json!({"ids": []}),
    )
    .await;
    assert_eq!(invalid.is_error, Some(true));
    let error = payload(&invalid);
    assert_eq!(error["code"], "INVALID_INPUT");
    assert_eq!(error["retry"], "with-changes");
    assert_eq!(error["details"]["issues"][0]["path"], "/ids");
    assert!(error["message"].as_str().is_some());
    // Two-phase confirmation (no elicitation support declared).
    call(
        client,
        "view_devices__table__selectRows",
        json!({"ids": ["d2", "d3"]}),
    )
    .await;
    let asked = call(client, "domain_devices__disable", json!({})).await;
    let error = payload(&asked);
    assert_eq!(error["code"], "CONFIRMATION_REQUIRED");
    assert_eq!(error["retry"], "with-confirmation");
    let id = error["details"]["confirmationId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The application's own dialog approves; the model calls again.
    let confirmations = connected.app.registry().confirmations();
    let shown = confirmations.find(&id).unwrap().shown();
    confirmations.approve(&shown).unwrap();
    let done = call(client, "domain_devices__disable", json!({})).await;
    assert_eq!(payload(&done), json!({"disabled": 2}), "{done:?}");
    // Unknown tools are the protocol's invalid-params error.
    let unknown = client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("no_such_tool"), "{unknown}");
    connected.app.stop().await;
}

#[tokio::test]
async fn as_confirm_004_a_client_declaring_elicitation_cannot_approve_unless_the_host_opted_in() {
    // The client declares elicitation and would approve anything it is
    // asked; the host did not say its client asks a person. The server
    // never asks it: the call is two-phase, and only the application's
    // answer (here host code) lets the retry run.
    for modern in [false, true] {
        let connected = connect_tuned(modern, Probe::new(Some(true)), |b| b).await;
        let client = &connected.client;
        call(
            client,
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
        )
        .await;
        let asked = call(client, "domain_devices__disable", json!({})).await;
        let error = payload(&asked);
        assert_eq!(error["code"], "CONFIRMATION_REQUIRED", "{asked:?}");
        assert!(connected.probe.asked.lock().unwrap().is_empty());
        let again = call(client, "domain_devices__disable", json!({})).await;
        assert_eq!(payload(&again)["code"], "CONFIRMATION_REQUIRED");
        assert_eq!(
            connected.app.backend().get("d2").unwrap().status,
            Status::Offline
        );
        let id = error["details"]["confirmationId"].as_str().unwrap();
        let confirmations = connected.app.registry().confirmations();
        let shown = confirmations.find(id).unwrap().shown();
        confirmations.approve(&shown).unwrap();
        let done = call(client, "domain_devices__disable", json!({})).await;
        assert_eq!(payload(&done), json!({"disabled": 1}), "{done:?}");
        connected.app.stop().await;
    }
}

#[tokio::test]
async fn elicitation_asks_the_human_and_finishes_in_the_same_call() {
    for modern in [false, true] {
        let connected = connect(modern, Some(true)).await;
        let client = &connected.client;
        call(
            client,
            "view_devices__filters__set",
            json!({"status": "offline", "city": "Milan"}),
        )
        .await;
        call(
            client,
            "view_devices__table__selectRows",
            json!({"ids": ["d2", "d3", "d4"]}),
        )
        .await;
        let done = call(client, "domain_devices__disable", json!({})).await;
        assert_eq!(payload(&done), json!({"disabled": 3}), "{done:?}");
        let asked = connected.probe.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert!(
            asked[0].contains(r#"{"deviceIds":["d2","d3","d4"]}"#),
            "{}",
            asked[0]
        );
        assert!(asked[0].contains("destructive"));
        // The client's answer came through its own connection, a channel
        // the host opted in: recorded as such, with the client's name.
        let approved = connected
            .app
            .registry()
            .audit_log()
            .into_iter()
            .find(|e| e.kind == agent_surface::audit::AuditKind::ConfirmationApproved)
            .unwrap();
        let detail = approved.detail.unwrap();
        assert_eq!(detail["channel"], "mcp-elicitation");
        assert_eq!(detail["channelKind"], "agent-connection");
        assert!(detail["approver"].as_str().is_some_and(|a| !a.is_empty()));
        for id in ["d2", "d3", "d4"] {
            assert_eq!(
                connected.app.backend().get(id).unwrap().status,
                Status::Disabled
            );
        }
        connected.app.stop().await;
    }
}

#[tokio::test]
async fn as_conc_010_a_request_ended_in_the_app_ends_the_elicitation_wait_at_once() {
    let connected = connect_with(
        false,
        Probe {
            silent: true,
            ..Probe::new(Some(true))
        },
    )
    .await;
    let client = connected.client.peer().clone();
    call(
        &connected.client,
        "view_devices__table__selectRows",
        json!({"ids": ["d2"]}),
    )
    .await;
    let waiting = tokio::spawn(async move {
        client
            .call_tool(CallToolRequestParams::new("domain_devices__disable"))
            .await
            .unwrap()
    });
    let confirmations = connected.app.registry().confirmations();
    let mut pending = Vec::new();
    for _ in 0..100_000 {
        pending = confirmations.pending();
        if !pending.is_empty() && !connected.probe.asked.lock().unwrap().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(
        pending.len(),
        1,
        "asked while the client's person is silent"
    );
    // The person answers in the app while the client still asks its own.
    confirmations.deny(&pending[0].shown()).unwrap();
    // A deadlock guard, not a timing claim: without the fix this waits forever.
    let done = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the call settles once the request ended elsewhere")
        .unwrap();
    let error = payload(&done);
    assert_eq!(error["code"], "CONFIRMATION_INVALID", "{error}");
    assert_eq!(error["details"]["reason"], "denied");
    assert!(connected.app.server().received().is_empty());
    // The elicitation the client still shows is withdrawn: its dialog closes.
    let withdrawn = Arc::clone(&connected.probe.withdrawn);
    tokio::time::timeout(Duration::from_secs(30), async {
        while withdrawn.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the elicitation is withdrawn");
    assert_eq!(withdrawn.lock().unwrap().len(), 1);
    connected.app.stop().await;
}

#[tokio::test]
async fn a_declined_elicitation_is_a_final_denial() {
    for modern in [false, true] {
        let connected = connect(modern, Some(false)).await;
        let client = &connected.client;
        call(
            client,
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
        )
        .await;
        let denied = call(client, "domain_devices__disable", json!({})).await;
        let error = payload(&denied);
        assert_eq!(error["code"], "CONFIRMATION_INVALID");
        assert_eq!(error["details"]["reason"], "denied");
        assert_eq!(error["retry"], "no");
        assert!(connected.app.server().received().is_empty());
        connected.app.stop().await;
    }
}

#[tokio::test]
async fn a_stale_tool_after_navigation_fails_precisely() {
    let connected = connect(false, None).await;
    let client = &connected.client;
    assert!(
        tool_names(client)
            .await
            .contains(&"view_devices__table__sort".to_owned())
    );
    call(
        client,
        "view_app__navigation__goTo",
        json!({"route": "/settings"}),
    )
    .await;
    let stale = call(
        client,
        "view_devices__table__sort",
        json!({"by": "name", "dir": "asc"}),
    )
    .await;
    let error = payload(&stale);
    assert!(
        ["COMPONENT_UNMOUNTED", "CAPABILITY_NOT_FOUND"].contains(&error["code"].as_str().unwrap()),
        "{error}"
    );
    connected.app.stop().await;
}

#[tokio::test]
async fn sessions_are_distinct_consumers() {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let mut clients = Vec::new();
    for _ in 0..2 {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let server = server.clone();
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        clients.push(().serve(client_io).await.unwrap());
    }
    // The same JSON-RPC request ids, different sessions: no conflict.
    for client in &clients {
        let result = client
            .call_tool(
                CallToolRequestParams::new("view_devices__filters__set")
                    .with_arguments(json!({"status": "online"}).as_object().cloned().unwrap()),
            )
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    let consumers: Vec<String> = app
        .registry()
        .audit_log()
        .iter()
        .filter(|e| e.kind == agent_surface::audit::AuditKind::InvocationSettled)
        .filter_map(|e| e.consumer_id.as_deref().map(str::to_owned))
        .collect();
    assert_eq!(consumers.len(), 2);
    assert_ne!(consumers[0], consumers[1]);
    assert!(consumers.iter().all(|c| c.starts_with("mcp:session-")));
    app.stop().await;
}
