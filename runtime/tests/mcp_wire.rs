//! The MCP server adapter on the raw wire: hand-written JSON-RPC over an
//! in-process duplex stream, for what a client library would not send —
//! `tools/call` with non-object arguments, and `notifications/cancelled`
//! for a running call.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)] // test code

mod support;

use std::sync::Arc;
use std::time::Duration;

use agent_surface::audit::AuditKind;
use agent_surface::error::ErrorCode;
use agent_surface::mcp::McpServer;
use agent_surface::prelude::*;
use serde_json::{Value, json};
use support::{App, User};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::sync::watch;

/// Generous: a step that takes this long is a failure, not a slow machine.
const PATIENCE: Duration = Duration::from_secs(5);

/// A client that speaks newline-delimited JSON-RPC by hand.
struct Wire {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

impl Wire {
    /// Serves one session of `server` and completes the 2025-11-25 handshake.
    async fn connect(server: &McpServer) -> Wire {
        let (client_io, server_io) = tokio::io::duplex(256 * 1024);
        let server = server.clone();
        tokio::spawn(async move {
            let (read, write) = tokio::io::split(server_io);
            if let Ok(running) = server.serve_lines(BufReader::new(read), write).await {
                let _ = running.waiting().await;
            }
        });
        let (reader, writer) = tokio::io::split(client_io);
        let mut wire = Wire {
            lines: BufReader::new(reader).lines(),
            writer,
        };
        wire.send(json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "wire", "version": "0"}
            }
        }))
        .await;
        let initialized = wire.response(0).await;
        assert!(initialized.get("result").is_some(), "{initialized}");
        wire.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        wire
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    /// Sends `line` as it is written (JSON `serde_json` may not read).
    async fn send_raw(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// The response to request `id` (other messages are skipped).
    async fn response(&mut self, id: u64) -> Value {
        self.until(id).await.1
    }

    /// The next response with `"id": null` (other messages are skipped).
    async fn unaddressed(&mut self) -> Value {
        self.until_id(&Value::Null).await.1
    }

    /// Every message before the response to `id`, and that response.
    async fn until(&mut self, id: u64) -> (Vec<Value>, Value) {
        self.until_id(&json!(id)).await
    }

    /// Every message before the response whose id is `id` (any JSON:
    /// a number, a string, `null`), and that response.
    async fn until_id(&mut self, id: &Value) -> (Vec<Value>, Value) {
        tokio::time::timeout(PATIENCE, async {
            let mut before = Vec::new();
            loop {
                let line = self
                    .lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("the server hung up");
                let message: Value = serde_json::from_str(&line).unwrap();
                if message.get("id") == Some(id) && message.get("method").is_none() {
                    return (before, message);
                }
                before.push(message);
            }
        })
        .await
        .expect("a response in time")
    }

    async fn call(&mut self, id: u64, name: &str, arguments: Value) {
        self.send(json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments}
        }))
        .await;
    }
}

#[tokio::test]
async fn non_object_arguments_are_invalid_params() {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let mut wire = Wire::connect(&server).await;
    let shapes = [
        json!(["d2"]),
        json!("d2"),
        json!(42),
        json!(1.5),
        json!(true),
    ];
    for (id, arguments) in (1..).zip(shapes) {
        wire.call(id, "view_devices__table__selectRows", arguments.clone())
            .await;
        let response = wire.response(id).await;
        assert_eq!(
            response["error"]["code"],
            json!(-32602),
            "arguments {arguments}: {response}"
        );
        assert!(
            response["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("tools/call")),
            "{response}"
        );
    }
    // An object still works on the same session.
    wire.call(9, "view_devices__table__selectRows", json!({"ids": ["d2"]}))
        .await;
    let response = wire.response(9).await;
    assert_ne!(response["result"]["isError"], json!(true), "{response}");
    // An unknown method is still method-not-found.
    wire.send(json!({"jsonrpc": "2.0", "id": 10, "method": "tools/frobnicate", "params": {}}))
        .await;
    assert_eq!(wire.response(10).await["error"]["code"], json!(-32601));
    // Whatever its params: with params no method takes, it is still the
    // method that is wrong; a known method's wrong params are -32602.
    wire.send(json!({"jsonrpc": "2.0", "id": 11, "method": "tools/frobnicate", "params": [1]}))
        .await;
    assert_eq!(wire.response(11).await["error"]["code"], json!(-32601));
    wire.send(json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": [1]}))
        .await;
    assert_eq!(wire.response(12).await["error"]["code"], json!(-32602));
    app.stop().await;
}

#[tokio::test]
async fn an_unknown_name_is_echoed_cut_short() {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let mut wire = Wire::connect(&server).await;
    let long = "v".repeat(100_000);
    wire.call(1, &long, json!({})).await;
    let response = wire.response(1).await;
    assert_eq!(response["error"]["code"], json!(-32602), "{response}");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("unknown tool `vvv"), "{message}");
    assert!(message.chars().count() < 200, "{} chars", message.len());
    wire.send(json!({"jsonrpc": "2.0", "id": 2, "method": long, "params": {}}))
        .await;
    let response = wire.response(2).await;
    assert_eq!(response["error"]["code"], json!(-32601), "{response}");
    assert!(
        response.to_string().len() < 1_000,
        "{} bytes",
        response.to_string().len()
    );
    app.stop().await;
}

#[tokio::test]
async fn a_request_serde_cannot_read_is_still_answered() {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let mut wire = Wire::connect(&server).await;
    // JSON to the client's language, not to serde_json: a lone surrogate,
    // a number beyond f64.
    let unreadable = [(3, r#""\ud800""#), (4, r#""\udc00\ud800""#), (5, "1e400")];
    for (id, value) in unreadable {
        wire.send_raw(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"view_devices__table__selectRows","arguments":{{"ids":[{value}]}}}}}}"#
        ))
        .await;
        let response = wire.response(id).await;
        assert_eq!(
            response["error"]["code"],
            json!(-32602),
            "{value}: {response}"
        );
    }
    // No JSON at all: the parse error, with no id to answer under.
    wire.send_raw("{this is not json").await;
    assert_eq!(wire.unaddressed().await["error"]["code"], json!(-32700));
    // A notification nobody can read gets nothing, and the session goes on.
    wire.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/x","params":{"n":1e400}}"#)
        .await;
    wire.call(9, "view_devices__table__selectRows", json!({"ids": ["d2"]}))
        .await;
    let response = wire.response(9).await;
    assert_ne!(response["result"]["isError"], json!(true), "{response}");
    app.stop().await;
}

#[tokio::test]
async fn the_number_5_and_the_string_5_are_two_requests() {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let mut wire = Wire::connect(&server).await;
    wire.call(5, "view_devices__table__selectRows", json!({"ids": ["d1"]}))
        .await;
    let first = wire.response(5).await;
    assert_ne!(first["result"]["isError"], json!(true), "{first}");
    // Another request under the string id "5": not a retry of the first
    // (whose input differs), so no conflict.
    wire.send(json!({
        "jsonrpc": "2.0",
        "id": "5",
        "method": "tools/call",
        "params": {"name": "view_devices__table__selectRows", "arguments": {"ids": ["d2"]}}
    }))
    .await;
    let second = wire.until_id(&json!("5")).await.1;
    assert_ne!(second["result"]["isError"], json!(true), "{second}");
    app.stop().await;
}

#[tokio::test]
async fn a_long_request_id_still_names_its_invocation() {
    let app = App::start(User::admin()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let mut wire = Wire::connect(&server).await;
    // Longer than the registry keeps an invocation id (256 bytes), within
    // what the transport takes (1 KiB).
    let id = json!("r".repeat(900));
    let call = |ids: Value| {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": "view_devices__table__selectRows", "arguments": {"ids": ids}}
        })
    };
    wire.send(call(json!(["d1"]))).await;
    let first = wire.until_id(&id).await.1;
    assert_ne!(first["result"]["isError"], json!(true), "{first}");
    // The same id with other input: the same invocation, so a conflict.
    wire.send(call(json!(["d2"]))).await;
    let second = wire.until_id(&id).await.1;
    assert_eq!(
        second["result"]["structuredContent"]["code"],
        json!("INVOCATION_CONFLICT"),
        "{second}"
    );
    app.stop().await;
}

/// A component whose action waits until it is cancelled.
struct Slow {
    started: watch::Sender<bool>,
    cancelled: watch::Sender<bool>,
}

/// Work that ends only when cancelled.
#[agent_component(type = "test.slow")]
impl Slow {
    /// Waits until the call is cancelled.
    #[action(effect = "local-state", timeout = "60s")]
    async fn wait(&self, ctx: &ActionContext) -> Result<(), ActionError> {
        self.started.send_replace(true);
        ctx.cancellation().cancelled().await;
        self.cancelled.send_replace(true);
        Err(ActionError::cancelled())
    }
}

#[tokio::test]
async fn a_client_cancellation_cancels_the_running_invocation() {
    let app = App::start(User::admin()).await.unwrap();
    let slow = Arc::new(Slow {
        started: watch::channel(false).0,
        cancelled: watch::channel(false).0,
    });
    let _mounted = app.registry().mount(Arc::clone(&slow)).unwrap();
    let server = McpServer::builder(app.registry()).build();
    let mut wire = Wire::connect(&server).await;
    let mut started = slow.started.subscribe();
    let mut cancelled = slow.cancelled.subscribe();

    wire.call(7, "view_test__slow__wait", json!({})).await;
    tokio::time::timeout(PATIENCE, started.wait_for(|s| *s))
        .await
        .expect("the handler starts")
        .unwrap();
    wire.send(json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the user stopped it"}
    }))
    .await;
    tokio::time::timeout(PATIENCE, cancelled.wait_for(|c| *c))
        .await
        .expect("the handler observes the cancellation")
        .unwrap();
    // The call settles CANCELLED (the audit trail says so); the client
    // gave up on it, so no response is sent.
    let settled = tokio::time::timeout(PATIENCE, async {
        loop {
            let settled: Vec<_> = app
                .registry()
                .audit_log()
                .into_iter()
                .filter(|e| e.kind == AuditKind::InvocationSettled)
                .filter(|e| e.capability_id.as_deref() == Some("view:test.slow.wait"))
                .collect();
            if !settled.is_empty() {
                return settled;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the invocation settles");
    wire.send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}))
        .await;
    let (before, _) = wire.until(8).await;
    assert!(
        before.iter().all(|m| m.get("id") != Some(&json!(7))),
        "{before:?}"
    );
    assert_eq!(settled.len(), 1, "{settled:?}");
    assert_eq!(settled[0].code, Some(ErrorCode::Cancelled), "{settled:?}");
    assert_eq!(settled[0].invocation_id.as_deref(), Some("mcp-7"));
    app.stop().await;
}

#[tokio::test]
async fn as_policy_003_a_hidden_tool_answers_as_a_nonexistent_one_over_mcp() {
    // The viewer lacks `devices:write`: `domain:devices.disable` is hidden.
    let app = App::start(User::viewer()).await.unwrap();
    let server = McpServer::builder(app.registry()).build();
    let mut wire = Wire::connect(&server).await;
    wire.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    let listed = wire.response(1).await.to_string();
    assert!(!listed.contains("domain_devices__disable"), "{listed}");
    let mut answers = Vec::new();
    for (id, name) in [
        (2, "domain_devices__disable"),
        (3, "domain_devices__obliterate"),
        (4, "view_devices__vault__open"),
    ] {
        wire.call(id, name, json!({"reason": "x"})).await;
        let mut response = wire.response(id).await;
        // Only the request id and the name asked for differ by construction.
        response["id"] = json!(null);
        // `domain_devices__disable` is `domain:devices.disable` on the wire.
        let id_form = name.replacen('_', ":", 1).replace("__", ".");
        let text = response
            .to_string()
            .replace(name, "NAME")
            .replace(&id_form, "NAME");
        answers.push(text);
    }
    assert_eq!(answers[0], answers[1], "hidden vs nonexistent procedure");
    assert_eq!(answers[0], answers[2], "hidden vs nonexistent view tool");
}
