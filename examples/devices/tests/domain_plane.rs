//! End to end over a real MCP session: the console references the backend's
//! `devices.disable` tool, binds `deviceIds` to the table selection, and
//! forwards the approved call to the backend, which re-validates it and
//! enforces its own authorization.
//!
//! `cargo test -p devices --test domain_plane -- --nocapture` prints the
//! transcript.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)] // test code

use std::sync::Arc;

use agent_surface::prelude::*;
use agent_surface::procedure::mcp::McpExecutor;
use agent_surface::procedure::{EffectSource, ProcedureExecutor};
use agent_surface::registry::Registry;
use devices::{Backend, BackendServer, Console, Status, User, mount_console};
use rmcp::ServiceExt;
use rmcp::service::RunningService;
use serde_json::{Value, json};

/// A user's MCP session with the backend, over an in-process duplex stream.
struct Session {
    server: BackendServer,
    client: RunningService<rmcp::RoleClient, ()>,
}

async fn session(backend: &Arc<Backend>, user: User) -> Session {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server = BackendServer::new(Arc::clone(backend), user);
    let serving = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = serving.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.expect("the MCP handshake");
    Session { server, client }
}

/// The console's registry for a signed-in user, with the backend's errors
/// mapped: `forbidden` is the server refusing the user.
async fn console_registry(session: &Session, user: &str, permissions: &[&str]) -> Registry {
    let host_user = json!({"id": user, "permissions": permissions});
    let registry = Registry::builder()
        .host_context(move || HostContext::new().with("user", host_user.clone()))
        .procedure_errors(|_, error| match error.code() {
            Some("forbidden") => Some(ErrorPayload::not_authorized(
                agent_surface::error::Origin::Server,
            )),
            _ => None,
        })
        .build();
    let executor = McpExecutor::connect(session.client.peer().clone())
        .await
        .expect("tools/list");
    let mismatches = registry.set_procedure_executor(Some(Arc::new(executor)));
    assert!(mismatches.is_empty(), "{mismatches:?}");
    registry
}

fn step(n: u32, what: &str, value: &impl serde::Serialize) {
    println!(
        "{n}. {what}\n   {}",
        serde_json::to_string(value).unwrap_or_default()
    );
}

async fn run(registry: &Registry, invocation: Invocation) -> InvocationResult {
    registry.invoke(invocation, InvokeOptions::default()).await
}

async fn select_offline_in_milan(registry: &Registry) -> Vec<String> {
    let set = run(
        registry,
        Invocation::new("view:devices.filters.set")
            .input(json!({"status": "offline", "city": "Milan"})),
    )
    .await;
    assert!(set.is_ok(), "{set:?}");
    let state = run(registry, Invocation::new("view:devices.table.readState")).await;
    let ids: Vec<String> = state.output().unwrap()["visibleRows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["id"].as_str().unwrap().to_owned())
        .collect();
    let selected = run(
        registry,
        Invocation::new("view:devices.table.selectRows").input(json!({"ids": ids})),
    )
    .await;
    assert!(selected.is_ok(), "{selected:?}");
    ids
}

#[tokio::test]
async fn the_manifest_comes_from_the_backends_tools() {
    let backend = Arc::new(Backend::demo());
    let session = session(
        &backend,
        User::new("admin", &["devices:read", "devices:write"]),
    )
    .await;
    let executor = McpExecutor::connect(session.client.peer().clone())
        .await
        .unwrap();
    let entry = executor.manifest().get("domain:devices.disable").unwrap();
    assert_eq!(
        entry.get_effect(),
        Some((agent_surface::Effect::Destructive, EffectSource::Inferred))
    );
    assert_eq!(
        entry.get_description(),
        Some("Disable devices: they stop reporting until an operator re-enables them.")
    );
}

#[tokio::test]
async fn an_approved_disable_reaches_the_backend_with_exactly_the_bound_input() {
    let backend = Arc::new(Backend::demo());
    let session = session(
        &backend,
        User::new("admin", &["devices:read", "devices:write"]),
    )
    .await;
    let registry = console_registry(&session, "admin", &["devices:read", "devices:write"]).await;
    let console = Console::new(Arc::clone(&backend));
    let _mounted = mount_console(&registry, &console).unwrap();

    println!("--- admin: disable the offline devices in Milan");
    let ids = select_offline_in_milan(&registry).await;
    step(
        1,
        "selected (filters.set, table.readState, table.selectRows)",
        &ids,
    );
    assert!(ids.len() >= 3);

    let snapshot = registry.snapshot(&SnapshotOptions::default()).to_json();
    let descriptor = &snapshot["procedures"][0];
    step(2, "snapshot.procedures[0]", descriptor);
    assert_eq!(descriptor["procedureId"], "domain:devices.disable");
    assert_eq!(descriptor["available"], true);
    assert_eq!(
        descriptor["inputSchema"]["properties"],
        json!({"reason": {"description": "Why they are disabled, for the audit trail.", "maxLength": 500, "type": ["string", "null"]}})
    );
    assert_eq!(
        descriptor["boundFields"],
        json!([{"path": "/deviceIds", "locked": true, "source": "ui-state"}])
    );
    assert_eq!(descriptor["context"]["type"], "devices.table");

    let disable = || {
        Invocation::new("domain:devices.disable")
            .input(json!({}))
            .invocation_id("call-1")
    };
    let asked = run(&registry, disable()).await;
    step(3, "domain:devices.disable {}", &asked);
    let error = asked.error().unwrap();
    assert_eq!(error.code(), ErrorCode::ConfirmationRequired);
    let confirmation = error
        .detail("confirmationId")
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    let pending = registry.confirmations().pending();
    step(4, "pending confirmation (what the user sees)", &pending[0]);
    assert_eq!(pending[0].input, json!({"deviceIds": ids}));
    assert!(
        session.server.received().is_empty(),
        "nothing reached the backend yet"
    );

    {
        let c = registry.confirmations();
        c.approve(&c.find(&confirmation).unwrap().shown()).unwrap()
    };
    step(5, "the user approves", &confirmation);
    let done = run(&registry, disable().confirmation(&confirmation)).await;
    step(6, "retry with the confirmationId", &done);
    let disabled = u64::try_from(ids.len()).unwrap();
    assert_eq!(done.output(), Some(&json!({"disabled": disabled})));

    let received = session.server.received();
    step(
        7,
        "what the backend received",
        &received
            .iter()
            .map(|r| json!({"tool": r.tool, "arguments": r.arguments, "meta": r.meta}))
            .collect::<Vec<_>>(),
    );
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].arguments, json!({"deviceIds": ids}));
    assert_eq!(received[0].meta["agentSurface/invocationId"], "call-1");
    assert_eq!(
        received[0].meta["agentSurface/confirmation"]["id"],
        json!(confirmation)
    );
    for id in &ids {
        assert_eq!(backend.get(id).unwrap().status, Status::Disabled);
    }

    // Disabled, they left the offline view and the selection: show every
    // status and select them again, so the replay asks for exactly the
    // same input.
    let all = run(
        &registry,
        Invocation::new("view:devices.filters.set").input(json!({"status": "all"})),
    )
    .await;
    assert!(all.is_ok(), "{all:?}");
    let again = run(
        &registry,
        Invocation::new("view:devices.table.selectRows").input(json!({"ids": ids})),
    )
    .await;
    assert!(again.is_ok(), "{again:?}");
    let replay = run(
        &registry,
        Invocation::new("domain:devices.disable")
            .input(json!({}))
            .confirmation(&confirmation),
    )
    .await;
    step(8, "a replay of the same evidence", &replay);
    assert_eq!(
        replay.error().unwrap().detail("reason"),
        Some(&json!("consumed"))
    );
    assert_eq!(session.server.received().len(), 1);
}

#[tokio::test]
async fn a_user_the_backend_rejects_gets_not_authorized_from_the_server() {
    let backend = Arc::new(Backend::demo());
    // The console still believes the user may write (a stale permission
    // cache); the backend knows better.
    let session = session(&backend, User::new("mallory", &["devices:read"])).await;
    let registry = console_registry(&session, "mallory", &["devices:read", "devices:write"]).await;
    let console = Console::new(Arc::clone(&backend));
    let _mounted = mount_console(&registry, &console).unwrap();

    println!("--- mallory: the backend refuses");
    let ids = select_offline_in_milan(&registry).await;
    let disable = || Invocation::new("domain:devices.disable").input(json!({"reason": "cleanup"}));
    let asked = run(&registry, disable()).await;
    let confirmation = asked
        .error()
        .unwrap()
        .detail("confirmationId")
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    {
        let c = registry.confirmations();
        c.approve(&c.find(&confirmation).unwrap().shown()).unwrap()
    };
    let refused = run(&registry, disable().confirmation(&confirmation)).await;
    step(1, "domain:devices.disable after approval", &refused);
    let error = refused.error().unwrap();
    assert_eq!(error.code(), ErrorCode::NotAuthorized);
    assert_eq!(error.detail("origin"), Some(&json!("server")));
    assert_eq!(error.retry(), agent_surface::Retry::No);
    // The backend saw the call, refused it, and changed nothing.
    let received = session.server.received();
    assert_eq!(
        received[0].arguments,
        json!({"deviceIds": ids, "reason": "cleanup"})
    );
    for id in &ids {
        assert_eq!(backend.get(id).unwrap().status, Status::Offline);
    }
}

#[tokio::test]
async fn a_viewer_never_sees_the_procedure() {
    let backend = Arc::new(Backend::demo());
    let session = session(&backend, User::new("viewer", &["devices:read"])).await;
    let registry = console_registry(&session, "viewer", &["devices:read"]).await;
    let console = Console::new(Arc::clone(&backend));
    let _mounted = mount_console(&registry, &console).unwrap();
    select_offline_in_milan(&registry).await;
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert!(snapshot.procedures().is_empty());
    let hidden = run(
        &registry,
        Invocation::new("domain:devices.disable").input(json!({})),
    )
    .await;
    assert_eq!(
        hidden.error().unwrap().code(),
        ErrorCode::CapabilityNotFound
    );
    assert!(session.server.received().is_empty());
}

#[tokio::test]
async fn the_backend_revalidates_what_it_receives() {
    let backend = Arc::new(Backend::demo());
    let session = session(
        &backend,
        User::new("admin", &["devices:read", "devices:write"]),
    )
    .await;
    // Straight to the backend, bypassing the console: it re-validates.
    let call = |arguments: Value| {
        let peer = session.client.peer().clone();
        async move {
            let params = rmcp::model::CallToolRequestParams::new("devices.disable")
                .with_arguments(arguments.as_object().cloned().unwrap_or_default());
            peer.call_tool(params).await.unwrap()
        }
    };
    for bad in [
        json!({"deviceIds": []}),
        json!({"deviceIds": ["d2"], "extra": 1}),
        json!({"deviceIds": ["nope"]}),
    ] {
        let result = call(bad.clone()).await;
        assert_eq!(result.is_error, Some(true), "{bad}");
    }
    assert_eq!(backend.get("d2").unwrap().status, Status::Offline);
}
