//! The MCP HTTP endpoint under hostile requests, over raw HTTP (reqwest)
//! and raw TCP: origins and hosts on every verb, protocol state (a second
//! `initialize`, malformed bodies, unknown sessions), agent-chosen ids,
//! and the bounds on sessions, reads and connections.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod support;

use std::time::Duration;

use agent_surface::mcp::McpServerBuilder;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{LEGACY, PATIENCE, Served, payload, serve, serve_beside_pages};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Every verb of the endpoint with `origin`: initialize, a call on a live
/// session, the GET stream, DELETE, and a stateless request.
async fn statuses_with_origin(served: &Served, session: &str, origin: &str) -> Vec<StatusCode> {
    let with = [("origin", origin)];
    let initialize = served.initialize_with(&with).await.status;
    let call = served
        .post_json(
            &[
                ("origin", origin),
                ("mcp-session-id", session),
                ("mcp-protocol-version", LEGACY),
            ],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "view_devices__table__readState", "arguments": {}}}),
        )
        .await
        .status;
    let stream = served
        .client
        .get(&served.url)
        .header("origin", origin)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", LEGACY)
        .send()
        .await
        .unwrap()
        .status();
    let delete = served
        .client
        .delete(&served.url)
        .header("origin", origin)
        .header("mcp-session-id", session)
        .send()
        .await
        .unwrap()
        .status();
    let stateless = served
        .modern(json!(2), "tools/list", json!({}), &with)
        .await
        .status;
    vec![initialize, call, stream, delete, stateless]
}

#[tokio::test]
async fn foreign_origins_are_forbidden_on_every_verb() {
    let served = serve(|b| b).await;
    let session = served.open_session().await;
    let port = served.address().port();
    for origin in [
        "http://evil.example".to_owned(),
        "null".to_owned(),
        format!("http://127.0.0.1.evil.example:{port}"),
        format!("http://localhost.evil.example:{port}"),
        "file://".to_owned(),
        "not an origin".to_owned(),
    ] {
        let statuses = statuses_with_origin(&served, &session, &origin).await;
        assert!(
            statuses.iter().all(|s| *s == StatusCode::FORBIDDEN),
            "{origin}: {statuses:?}"
        );
    }
    // The refusal is a JSON-RPC error, as every refusal of `/mcp` is.
    let refused = served
        .send(served.post(&[("origin", "http://evil.example")]).body("{}"))
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(
        refused.messages[0]["error"]["code"], -32000,
        "{}",
        refused.body
    );
    // The forbidden DELETEs did nothing: the session still answers.
    assert!(!served.tools(&session).await.is_empty());
    // Loopback origins and requests without one pass.
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        let reply = served.initialize_with(&[("origin", &origin)]).await;
        assert_eq!(reply.status, StatusCode::OK, "{origin}: {}", reply.body);
    }
    assert_eq!(served.initialize_with(&[]).await.status, StatusCode::OK);
}

#[tokio::test]
async fn the_origin_and_host_allow_lists_are_builder_options() {
    let served = serve(|b| {
        b.allowed_origins(["https://app.example.com", "http://localhost:*"])
            .allowed_hosts(["127.0.0.1", "mcp.example.com"])
    })
    .await;
    let port = served.address().port();
    let status = |origin: String| {
        let served = &served;
        async move { served.initialize_with(&[("origin", &origin)]).await.status }
    };
    assert_eq!(
        status("https://app.example.com".into()).await,
        StatusCode::OK
    );
    assert_eq!(
        status("https://app.example.com:443".into()).await,
        StatusCode::OK
    );
    assert_eq!(
        status(format!("http://localhost:{port}")).await,
        StatusCode::OK
    );
    // The scheme's default port only, the exact scheme, nothing else.
    for refused in [
        "https://app.example.com:8443".to_owned(),
        "http://app.example.com".to_owned(),
        format!("http://127.0.0.1:{port}"),
    ] {
        assert_eq!(
            status(refused.clone()).await,
            StatusCode::FORBIDDEN,
            "{refused}"
        );
    }
    // Hosts: the listed ones (a reverse proxy's public name), no others.
    for (host, expected) in [
        ("mcp.example.com", StatusCode::OK),
        ("evil.example", StatusCode::FORBIDDEN),
        ("localhost", StatusCode::FORBIDDEN),
    ] {
        let reply = served.initialize_with(&[("host", host)]).await;
        assert_eq!(reply.status, expected, "{host}");
    }
}

#[tokio::test]
async fn a_second_initialize_is_refused_and_the_session_keeps_its_protocol() {
    let served = serve(|b| b).await;
    let session = served.open_session().await;
    let again = served
        .post_json(
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", LEGACY),
            ],
            &json!({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {
                "protocolVersion": "2024-11-05", "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "again", "version": "0"}}}),
        )
        .await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "{}", again.body);
    assert_eq!(again.messages[0]["error"]["code"], -32600);
    // Under a session the server never issued: not found, not "already
    // initialized".
    let unknown = served
        .post_json(
            &[("mcp-session-id", "never-issued")],
            &json!({"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": {
                "protocolVersion": "2024-11-05", "capabilities": {},
                "clientInfo": {"name": "lost", "version": "0"}}}),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.body);
    assert_eq!(unknown.messages[0]["error"]["code"], -32001);
    // Still the negotiated session: its requests carry the same version.
    assert!(
        served
            .tools(&session)
            .await
            .contains(&"view_devices__table__readState".to_owned())
    );
}

#[tokio::test]
async fn a_second_initialize_is_refused_on_a_stream_transport() {
    let app = support::App::start(support::User::admin()).await.unwrap();
    let server = agent_surface::mcp::McpServer::builder(app.registry()).build();
    let (client, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let (reader, mut writer) = tokio::io::split(client);
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(reader));
    let init = |id: u64, version: &str| {
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "wire", "version": "0"}}})
        )
    };
    writer.write_all(init(1, LEGACY).as_bytes()).await.unwrap();
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["result"]["protocolVersion"], LEGACY);
    writer
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    writer
        .write_all(init(2, "2024-11-05").as_bytes())
        .await
        .unwrap();
    let second = tokio::time::timeout(PATIENCE, async {
        loop {
            let line = lines.next_line().await.unwrap().unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == 2 {
                return message;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(second["error"]["code"], -32600, "{second}");
}

#[tokio::test]
async fn malformed_bodies_are_bad_requests() {
    let served = serve(|b| b).await;
    let raw = |body: &'static str| served.send(served.post(&[]).body(body));
    let not_json = raw("{not json").await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST);
    assert_eq!(not_json.messages[0]["error"]["code"], -32700);
    // Each with the fault the line transport names; where an id is
    // given, it comes back as the client wrote it (or as the transport
    // reads a float-form integer).
    for (body, id, code) in [
        ("[]", None, -32600),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            None,
            -32600,
        ),
        (r#"{"jsonrpc":"2.0"}"#, None, -32600),
        (r#"{}"#, None, -32600),
        // A known method with params it does not take; a method no
        // server takes, whatever its params: as the line transport says.
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":7}"#,
            None,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#,
            None,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"no/such","params":[1]}"#,
            Some(json!(1)),
            -32601,
        ),
        ("42", None, -32600),
        // Duplicate keys: a JSON value keeps the last, the transport
        // refuses the message; either order is the same typed refusal,
        // under the id only when its copies agree.
        (
            r#"{"jsonrpc":"2.0","id":"first","method":"tools/list","id":"second"}"#,
            Some(Value::Null),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}"#,
            Some(Value::Null),
            -32600,
        ),
        // Duplicate methods, one of them `initialize`, in either order.
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","method":"tools/list"}"#,
            Some(json!(1)),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
            Some(json!(1)),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"ping","params":"\ud800"}"#,
            Some(json!(8)),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"ping","params":1e999}"#,
            Some(json!(9)),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":10,"method":"no/such","params":{"a":"\udc00"}}"#,
            Some(json!(10)),
            -32601,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"id":3,"method":"ping"}"#,
            Some(json!(3)),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.0,"method":"ping","params":5}"#,
            Some(json!(1)),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping","params":5}"#,
            Some(Value::Null),
            -32600,
        ),
        // Not JSON by its grammar: the parse error, whatever id it seems
        // to have.
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":}}"#,
            Some(Value::Null),
            -32700,
        ),
    ] {
        let reply = raw(body).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        if let Some(id) = id {
            assert_eq!(reply.messages[0]["id"], id, "{body}: {}", reply.body);
        }
        assert_eq!(reply.messages[0]["error"]["code"], code, "{body}");
    }
    // Refused in front of the gate (size), still a JSON-RPC error.
    let huge = served
        .send(served.post(&[]).body("x".repeat(2 * 1024 * 1024)))
        .await;
    assert_eq!(huge.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(huge.messages[0]["error"]["code"], -32000, "{}", huge.body);
    // Not JSON at all by its own account: still the transport's 415.
    let typed = served
        .send(
            served
                .client
                .post(&served.url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "text/plain")
                .body("hello"),
        )
        .await;
    assert_eq!(typed.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn sessions_the_server_does_not_hold_are_not_found() {
    let served = serve(|b| b).await;
    assert_eq!(served.delete("never-issued").await, StatusCode::NOT_FOUND);
    let session = served.open_session().await;
    // Ended: 200, what the official SDKs answer and their clients expect.
    assert_eq!(served.delete(&session).await, StatusCode::OK);
    assert_eq!(served.delete(&session).await, StatusCode::NOT_FOUND);
    let reply = served
        .request(&session, json!(1), "tools/list", json!({}))
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let made_up = served
        .request("made-up", json!(7), "tools/list", json!({}))
        .await;
    assert_eq!(made_up.status, StatusCode::NOT_FOUND);
    // Each is a JSON-RPC error, and every one the same bytes (no id):
    // an ended session and one never issued cannot be told apart.
    for reply in [&reply, &made_up] {
        let error = &reply.messages[0];
        assert_eq!(error["id"], Value::Null, "{}", reply.body);
        assert_eq!(error["error"]["code"], -32001, "{}", reply.body);
    }
    assert_eq!(reply.body, made_up.body);
    let no_session = served
        .post_json(
            &[],
            &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}),
        )
        .await;
    assert_eq!(no_session.status, StatusCode::BAD_REQUEST);
    assert_eq!(no_session.messages[0]["id"], 8, "{}", no_session.body);
    assert_eq!(no_session.messages[0]["error"]["code"], -32600);
}

#[tokio::test]
async fn as_ident_004_agent_chosen_ids_over_the_limit_never_become_invocation_ids() {
    let served = serve(|b| b).await;
    let registry = served.app.registry().clone();
    let session = served.open_session().await;
    let limit = registry.limits().max_id_bytes;
    // Over the limit as sent: refused at the gate with a typed payload.
    let long = "x".repeat(limit + 1);
    let reply = served
        .request(
            &session,
            json!(long),
            "tools/call",
            json!({"name": "view_devices__table__readState", "arguments": {}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply.messages[0]["error"]["data"]["code"], "INVALID_INPUT",
        "{}",
        reply.body
    );
    assert_eq!(registry.dedupe_len(), 0, "nothing of a refused id is kept");
    // Within the limit as sent, over it as an invocation id (`mcp-` + the
    // session + id): the call runs under the id's digest (`mcp-h:` and 32
    // hex digits), so what is kept stays bounded.
    let near = "y".repeat(limit - 2);
    let named = served
        .call(
            &session,
            json!(near),
            "view_devices__table__readState",
            json!({}),
        )
        .await;
    assert_ne!(named["result"]["isError"], true, "{named}");
    assert_eq!(registry.dedupe_len(), 1);
    // A huge id is a too-large body, never parsed into anything.
    let huge = "z".repeat(3 << 20);
    let reply = served
        .request(&session, json!(huge), "tools/list", json!({}))
        .await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    // An id within bounds is an invocation id (remembered for retries).
    let ok = served
        .call(
            &session,
            json!("fine"),
            "view_devices__table__readState",
            json!({}),
        )
        .await;
    assert_ne!(ok["result"]["isError"], true, "{ok}");
    assert_eq!(registry.dedupe_len(), 2);
}

#[tokio::test]
async fn the_session_cap_refuses_with_a_typed_error_and_delete_frees_a_place() {
    let served = serve(|b| b.max_sessions(2)).await;
    let first = served.open_session().await;
    let _second = served.open_session().await;
    let refused = served.initialize_with(&[]).await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused.body
    );
    assert!(refused.headers.contains_key("retry-after"));
    assert!(refused.session().is_none());
    let data = &refused.messages[0]["error"]["data"];
    assert_eq!(data["code"], "RATE_LIMITED", "{}", refused.body);
    assert_eq!(data["details"]["reason"], "sessions-full");
    assert!(served.delete(&first).await.is_success());
    support::eventually("a place frees up after DELETE", async || {
        served.initialize_with(&[]).await.status == StatusCode::OK
    })
    .await;
}

#[tokio::test]
async fn idle_sessions_expire_after_the_operator_set_time() {
    let served = serve(|b| b.session_idle_timeout(Duration::from_millis(300))).await;
    let session = served.open_session().await;
    // Leave something behind: a pending confirmation of this session.
    served
        .call(
            &session,
            json!(1),
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
        )
        .await;
    let asked = served
        .call(&session, json!(2), "domain_devices__disable", json!({}))
        .await;
    assert_eq!(payload(&asked)["code"], "CONFIRMATION_REQUIRED", "{asked}");
    let confirmations = served.app.registry().confirmations();
    assert_eq!(confirmations.pending().len(), 1);
    // Untouched (a request would count as activity), the session ends and
    // what it left is forgotten.
    support::eventually("the idle session ends", async || {
        confirmations.pending().is_empty()
    })
    .await;
    let reply = served
        .request(&session, json!(9), "tools/list", json!({}))
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

/// Reads until the peer closes (or `PATIENCE` runs out); what was read.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut seen)).await;
    String::from_utf8_lossy(&seen).into_owned()
}

#[tokio::test]
async fn stalled_headers_and_bodies_are_cut_off() {
    let tune = |b: McpServerBuilder| b.read_timeout(Duration::from_millis(200));
    // `/mcp` alone (`serve_http`), and one accept loop for a console's pages
    // and `/mcp` alike.
    for (served, paths) in [
        (serve(tune).await, &["/mcp"][..]),
        (
            serve_beside_pages(tune).await,
            &["/mcp", "/devices", "/ws"][..],
        ),
    ] {
        let address = served.address();
        for path in paths {
            // Headers that never finish: the connection closes.
            let mut stalled = TcpStream::connect(address).await.unwrap();
            stalled
                .write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n").as_bytes())
                .await
                .unwrap();
            let started = tokio::time::Instant::now();
            let _ = read_to_close(&mut stalled).await;
            assert!(
                started.elapsed() < PATIENCE,
                "the stalled headers hold the connection on {path}"
            );
        }
        // A body that never finishes: 408, and the connection closes.
        let mut slow = TcpStream::connect(address).await.unwrap();
        slow.write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
              Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
        )
        .await
        .unwrap();
        let started = tokio::time::Instant::now();
        let answer = read_to_close(&mut slow).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(started.elapsed() < PATIENCE);
        // An idle connection (no request at all) is closed too.
        let mut idle = TcpStream::connect(address).await.unwrap();
        let started = tokio::time::Instant::now();
        assert_eq!(read_to_close(&mut idle).await, "");
        assert!(started.elapsed() < PATIENCE);
    }
}

#[tokio::test]
async fn connections_beyond_the_limit_wait_for_a_free_one() {
    let tune = |b: McpServerBuilder| {
        b.max_connections(2)
            .read_timeout(Duration::from_millis(400))
    };
    for served in [serve(tune).await, serve_beside_pages(tune).await] {
        connections_wait(&served).await;
    }
}

async fn connections_wait(served: &Served) {
    let address = served.address();
    let mut holders = [
        TcpStream::connect(address).await.unwrap(),
        TcpStream::connect(address).await.unwrap(),
    ];
    // Both holders are served connections before the third arrives.
    let [first, second] = &mut holders;
    let mut third = TcpStream::connect(address).await.unwrap();
    third
        .write_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();
    let mut answer = [0_u8; 12];
    // The third is answered only once a holder's connection closed (its
    // read timeout), never before: with no limit it would be answered at once.
    let order = tokio::time::timeout(PATIENCE, async {
        let (mut sink, mut other) = (Vec::new(), Vec::new());
        tokio::select! {
            biased;
            _ = first.read_to_end(&mut sink) => "holder closed",
            _ = second.read_to_end(&mut other) => "holder closed",
            _ = third.read_exact(&mut answer) => "third answered",
        }
    })
    .await
    .unwrap();
    assert_eq!(order, "holder closed");
    tokio::time::timeout(PATIENCE, third.read_exact(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 "),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
}

/// Opens a `GET` event stream on `session` over a connection of its own;
/// the stream and its status line.
async fn event_stream(address: std::net::SocketAddr, session: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(
            format!(
                "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
                 Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: {LEGACY}\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut head = [0_u8; 12];
    tokio::time::timeout(PATIENCE, stream.read_exact(&mut head))
        .await
        .unwrap()
        .unwrap();
    (stream, String::from_utf8_lossy(&head).into_owned())
}

#[tokio::test]
async fn mcp_streams_never_take_the_connections_the_console_pages_need() {
    // Eight connections: `/mcp` holds at most six at once, streams at most
    // three of those, one session at most three.
    let served = serve_beside_pages(|b| b.max_connections(8)).await;
    let address = served.address();
    let session = served.open_session().await;
    let other = served.open_session().await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        let (stream, head) = event_stream(address, &session).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        streams.push(stream);
    }
    // A fourth stream, from any session, is refused at once, typed…
    let (_refused, head) = event_stream(address, &other).await;
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    // …and so is another request of the session holding its share…
    let reply = served
        .request(&session, json!(2), "tools/list", json!({}))
        .await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.body
    );
    assert!(reply.headers.contains_key("retry-after"));
    let refused = reply.messages.first().cloned().unwrap_or(Value::Null);
    assert_eq!(
        refused["error"]["data"]["code"], "RATE_LIMITED",
        "{refused}"
    );
    // …while another session's calls still pass,
    let listed = served
        .request(&other, json!(2), "tools/list", json!({}))
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    // and the console's page is still served.
    let mut page = TcpStream::connect(address).await.unwrap();
    page.write_all(b"GET /devices HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = read_to_close(&mut page).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    // A stream that ends gives its share back.
    drop(streams.pop());
    support::eventually("a closed stream frees its share", async || {
        served
            .request(&session, json!(3), "tools/list", json!({}))
            .await
            .status
            == StatusCode::OK
    })
    .await;
}

#[tokio::test]
async fn a_missing_or_repeated_host_is_a_bad_request() {
    // RFC 9112 §3.2: a request without exactly one Host is malformed (400),
    // on `/mcp` alone and beside a console's pages.
    for served in [serve(|b| b).await, serve_beside_pages(|b| b).await] {
        let address = served.address();
        for (what, hosts, expected) in [
            ("no Host", "", "HTTP/1.1 400"),
            (
                "two Hosts",
                "Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n",
                "HTTP/1.1 400",
            ),
            ("one foreign Host", "Host: evil.example\r\n", "HTTP/1.1 403"),
        ] {
            let mut stream = TcpStream::connect(address).await.unwrap();
            stream
                .write_all(
                    format!(
                        "POST /mcp HTTP/1.1\r\n{hosts}Accept: application/json, text/event-stream\r\n\
                         Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
                    )
                    .as_bytes(),
                )
                .await
                .unwrap();
            let answer = read_to_close(&mut stream).await;
            assert!(answer.starts_with(expected), "{what}: {answer}");
        }
    }
}

/// Opens a connection that starts a `/mcp` POST and sends one byte of its
/// 1,000-byte body (more follows only as the test trickles it).
async fn slow_upload(address: std::net::SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
              Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
        )
        .await
        .unwrap();
    stream
}

#[tokio::test]
async fn slow_uploads_and_idle_connections_never_keep_anyone_out() {
    // On `/mcp` alone and beside a console's pages, at the default limits.
    for served in [serve(|b| b).await, serve_beside_pages(|b| b).await] {
        let address = served.address();
        let session = served.open_session().await;
        // 250 uploads trickling a byte now and then: under the connection
        // cap, over the share `/mcp` requests may hold at once.
        let mut slow = Vec::new();
        for _ in 0..250 {
            slow.push(slow_upload(address).await);
        }
        for round in 0..3 {
            for stream in &mut slow {
                let _ = stream.write_all(b" ").await;
            }
            let started = std::time::Instant::now();
            let reply = served
                .request(&session, json!(round + 1), "tools/list", json!({}))
                .await;
            assert_eq!(
                reply.status,
                StatusCode::OK,
                "round {round}: {}",
                reply.body
            );
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "round {round}: served in {:?}",
                started.elapsed()
            );
        }
        // 250 idle connections more (500 slow or idle in all): a person's
        // page is still served within a second.
        let mut idle = Vec::new();
        for _ in 0..250 {
            idle.push(TcpStream::connect(address).await.unwrap());
        }
        let started = std::time::Instant::now();
        let mut page = TcpStream::connect(address).await.unwrap();
        page.write_all(b"GET /devices HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(1), read_to_close(&mut page))
            .await
            .expect("the page within a second");
        assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
        assert!(started.elapsed() < Duration::from_secs(1));
        // The trickling uploads were cut (408) or gave way, never served.
        drop(idle);
        drop(slow);
    }
}

/// An app served with `/mcp`, `routes` beside it, at most `cap` connections.
async fn serve_routes(
    cap: usize,
    routes: axum::Router,
) -> (support::App, agent_surface::mcp::HttpServer) {
    let app = support::App::start(support::User::admin()).await.unwrap();
    let server = agent_surface::mcp::McpServer::builder(app.registry())
        .max_connections(cap)
        .build();
    let http = server
        .serve_with("127.0.0.1:0".parse().unwrap(), routes)
        .await
        .unwrap();
    (app, http)
}

#[tokio::test]
async fn clients_that_stop_reading_give_way_to_a_newcomer() {
    // A route streaming 32 MiB (as a file would be), and four clients with
    // small receive buffers that ask for it and never read.
    let big = || async { axum::body::Body::new(Frames(4096)) };
    let routes = axum::Router::new()
        .route("/big", axum::routing::get(big))
        .route("/page", axum::routing::get(|| async { "the page" }));
    let (_app, http) = serve_routes(4, routes).await;
    let address = http.local_addr();
    let mut readers = Vec::new();
    for _ in 0..4 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(address).await.unwrap();
        stream
            .write_all(b"GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        readers.push(stream);
    }
    // The newcomer is served once a reader has left what it was sent
    // unread past the grace (2 s), never after the readers give up.
    let mut page = TcpStream::connect(address).await.unwrap();
    page.write_all(b"GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(6), read_to_close(&mut page))
        .await
        .expect("the newcomer is served while the readers still hold on");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(readers);
}

/// A body of this many 8 KiB frames, each sent as one write.
struct Frames(usize);

impl http_body::Body for Frames {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.0 == 0 {
            return std::task::Poll::Ready(None);
        }
        self.0 -= 1;
        let frame = http_body::Frame::data(axum::body::Bytes::from(vec![b'x'; 8192]));
        std::task::Poll::Ready(Some(Ok(frame)))
    }
}

#[tokio::test]
async fn upgraded_connections_keep_their_place_under_the_cap() {
    // A route switching protocols (as a websocket does) and echoing.
    let upgrade = |request: axum::extract::Request| async move {
        tokio::spawn(async move {
            if let Ok(upgraded) = hyper::upgrade::on(request).await {
                let mut io = hyper_util::rt::TokioIo::new(upgraded);
                let mut buf = [0_u8; 64];
                while let Ok(n @ 1..) = io.read(&mut buf).await {
                    if io.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        });
        axum::response::Response::builder()
            .status(101)
            .header("upgrade", "echo")
            .header("connection", "upgrade")
            .body(axum::body::Body::empty())
            .unwrap()
    };
    let routes = axum::Router::new().route("/echo", axum::routing::get(upgrade));
    let (_app, http) = serve_routes(2, routes).await;
    let address = http.local_addr();
    let open = async || {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream
            .write_all(
                b"GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n",
            )
            .await
            .unwrap();
        stream
    };
    // The whole head; its status line's first 12 bytes.
    let head = async |stream: &mut TcpStream| {
        let mut seen = Vec::new();
        let mut byte = [0_u8; 1];
        while !seen.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).await?;
            seen.push(byte[0]);
        }
        let mut status = [0_u8; 12];
        status.copy_from_slice(&seen[..12]);
        Ok::<_, std::io::Error>(status)
    };
    let mut first = open().await;
    let mut second = open().await;
    assert_eq!(&head(&mut first).await.unwrap(), b"HTTP/1.1 101");
    assert_eq!(&head(&mut second).await.unwrap(), b"HTTP/1.1 101");
    // Two upgraded connections fill a cap of two: a third waits…
    let mut third = open().await;
    let early = tokio::time::timeout(Duration::from_millis(1500), head(&mut third)).await;
    assert!(early.is_err(), "an upgrade escaped the cap");
    // …until one closes.
    drop(first);
    let late = tokio::time::timeout(PATIENCE, head(&mut third))
        .await
        .expect("served once a place is free")
        .unwrap();
    assert_eq!(&late, b"HTTP/1.1 101");
    // The upgraded connections still work.
    second.write_all(b"ping").await.unwrap();
    let mut echo = [0_u8; 4];
    second.read_exact(&mut echo).await.unwrap();
    assert_eq!(&echo, b"ping");
}

/// Reads `response`'s SSE stream until a message matching `wanted`.
async fn read_until(response: &mut reqwest::Response, wanted: impl Fn(&Value) -> bool) -> Value {
    let mut seen = String::new();
    tokio::time::timeout(PATIENCE, async {
        loop {
            let chunk = response.chunk().await.unwrap().expect("the stream goes on");
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(found) = support::raw_mcp::messages(&seen).into_iter().find(&wanted) {
                return found;
            }
        }
    })
    .await
    .expect("the message in time")
}

/// A `tools/call` of the disable under `id`, held while it asks the person:
/// its response stream, and the elicitation request read from it.
async fn held_disable(
    served: &Served,
    headers: &[(&str, &str)],
    id: u64,
) -> (reqwest::Response, Value) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "domain_devices__disable", "arguments": {}}});
    let mut held = served
        .post(headers)
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    let asked = read_until(&mut held, |m| m["method"] == "elicitation/create").await;
    (held, asked)
}

/// Waits until `session` may use `id` again: a `tools/list` under it gets
/// its own answer (never another request's).
async fn id_freed(served: &Served, session: &str, id: u64) {
    support::eventually("the id is free again", async || {
        let reply = served
            .request(session, json!(id), "tools/list", json!({}))
            .await;
        match reply
            .response(&json!(id))
            .and_then(|answer| answer.get("result"))
        {
            Some(result) => {
                assert!(result["tools"].is_array(), "{}", reply.body);
                true
            }
            None => false,
        }
    })
    .await;
}

/// A session whose client takes elicitation, initialized, with `d2`
/// selected (so the disable asks the person): its id and its headers.
async fn eliciting_session(served: &Served) -> String {
    let reply = served
        .post_json(
            &[],
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "raw", "version": "0"}}}),
        )
        .await;
    let session = reply.session().expect("a session");
    served
        .post_json(
            &[
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", LEGACY),
            ],
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
    served
        .call(
            &session,
            json!(1),
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
        )
        .await;
    session
}

#[tokio::test]
async fn as_ident_004_a_request_under_an_id_its_session_has_in_flight_is_refused_and_other_sessions_reuse_it()
 {
    let served = serve(|b| b.elicitation(true)).await;
    let session = eliciting_session(&served).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    // The disable asks the person: its request stays in flight.
    let (mut held, asked) = held_disable(&served, &headers, 7).await;
    // The same id again, for anything: refused under that id, nothing run.
    let again = served
        .request(&session, json!(7), "tools/list", json!({}))
        .await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "{}", again.body);
    assert_eq!(again.messages[0]["id"], json!(7));
    assert_eq!(again.messages[0]["error"]["code"], json!(-32600));
    let message = again.messages[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("in flight"), "{message}");
    // Another session may use it.
    let other = served.open_session().await;
    assert!(!served.tools(&other).await.is_empty());
    let listed = served
        .request(&other, json!(7), "tools/list", json!({}))
        .await;
    assert!(listed.response(&json!(7)).is_some(), "{}", listed.body);
    // The person declines: the held call is answered, and its id is free.
    let declined = served
        .post_json(
            &headers,
            &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}),
        )
        .await;
    assert!(declined.status.is_success(), "{}", declined.body);
    let answered = read_until(&mut held, |m| m["id"] == json!(7)).await;
    assert!(answered.get("result").is_some(), "{answered}");
    drop(held);
    id_freed(&served, &session, 7).await;
    // A client that stops reading does not end its call: the id stays
    // taken until the call ends (here, the person answers in the app).
    let (held, _) = held_disable(&served, &headers, 8).await;
    drop(held);
    let again = served
        .request(&session, json!(8), "tools/list", json!({}))
        .await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "{}", again.body);
    let confirmations = served.app.registry().confirmations();
    let pending = confirmations.pending();
    assert_eq!(pending.len(), 1);
    confirmations.deny(&pending[0].shown()).unwrap();
    id_freed(&served, &session, 8).await;
}

#[tokio::test]
async fn as_ident_004_a_cancelled_calls_id_serves_a_new_request_with_its_own_answer() {
    let served = serve(|b| b.elicitation(true)).await;
    let session = eliciting_session(&served).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    for id in [9, 10, 11] {
        // The disable waits for the person, and the client cancels it.
        let (mut held, _) = held_disable(&served, &headers, id).await;
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": id, "reason": "changed my mind"}});
        let cancelled = served.post_json(&headers, &cancel).await;
        assert!(cancelled.status.is_success(), "{}", cancelled.body);
        // Its stream ends with no answer under its id.
        let rest = tokio::time::timeout(PATIENCE, async {
            let mut seen = String::new();
            while let Ok(Some(chunk)) = held.chunk().await {
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
            seen
        })
        .await
        .expect("the cancelled call's stream ends");
        assert!(
            support::raw_mcp::messages(&rest)
                .iter()
                .all(|message| message.get("id") != Some(&json!(id))
                    || message.get("method").is_some()),
            "{rest}"
        );
        // The id serves a new request, which gets its own answer.
        id_freed(&served, &session, id).await;
    }
    // The same call under a cancelled call's id is that call's retry: its
    // settled outcome, nothing run again.
    let retried = served
        .call(&session, json!(9), "domain_devices__disable", json!({}))
        .await;
    assert!(retried.to_string().contains("CANCELLED"), "{retried}");
    // Nothing of the cancelled calls is held: the session has its share.
    for id in 100..110 {
        id_freed(&served, &session, id).await;
    }
}

#[tokio::test]
async fn http_service_in_a_host_router_checks_origins_and_hosts_itself() {
    let mounted = support::http::mount_in_host_router(|b| b).await;
    let port = mounted.address.port();
    for (header, value, expected) in [
        (
            "origin",
            "https://evil.example".to_owned(),
            StatusCode::FORBIDDEN,
        ),
        ("host", "evil.example".to_owned(), StatusCode::FORBIDDEN),
        // No port a port can be: refused by this gate, whatever the
        // transport's own check would say.
        (
            "origin",
            "http://localhost:99999".to_owned(),
            StatusCode::FORBIDDEN,
        ),
        ("host", "localhost:0x50".to_owned(), StatusCode::FORBIDDEN),
        ("origin", format!("http://localhost:{port}"), StatusCode::OK),
    ] {
        let reply = mounted.raw.initialize_with(&[(header, &value)]).await;
        assert_eq!(reply.status, expected, "{header}: {value}: {}", reply.body);
        if expected == StatusCode::FORBIDDEN {
            // The refusal is a JSON-RPC error, as every refusal of the route.
            assert_eq!(
                reply.messages[0]["error"]["code"],
                json!(-32000),
                "{}",
                reply.body
            );
        }
    }
}
