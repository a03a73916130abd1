//! A raw MCP client over streamable HTTP: a real HTTP client (reqwest)
//! speaking the transport by hand — JSON-RPC bodies, session headers, SSE
//! responses — so tests can send what a client library never would. Shared
//! by the runtime's MCP tests and the devices example's console tests
//! (which include this file by path).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

/// Generous: a step that takes this long is a failure, not a slow machine.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The handshake-era protocol version these tests speak.
pub const LEGACY: &str = "2025-11-25";
/// The sessionless protocol version.
pub const MODERN: &str = "2026-07-28";

/// Where the MCP endpoint is, and the HTTP client that speaks to it.
pub struct RawMcp {
    pub url: String,
    pub client: reqwest::Client,
}

impl RawMcp {
    /// A client of the endpoint at `url`.
    pub fn new(url: String) -> RawMcp {
        RawMcp {
            url,
            client: reqwest::Client::new(),
        }
    }
}

/// An HTTP reply: status, headers, body and the JSON-RPC messages in it
/// (one JSON body, or every SSE `data:` event).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
    pub messages: Vec<Value>,
}

impl Reply {
    /// The JSON-RPC response (result or error) to `id`.
    pub fn response(&self, id: &Value) -> Option<&Value> {
        self.messages
            .iter()
            .find(|m| m.get("id") == Some(id) && m.get("method").is_none())
    }

    /// The session id the server issued.
    pub fn session(&self) -> Option<String> {
        self.headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// The `_meta` a 2026-07-28 request carries.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    })
}

/// Parses a body: JSON, or SSE events.
pub fn messages(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return vec![value];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

impl RawMcp {
    /// A POST with the transport's headers and `extra` ones.
    pub fn post(&self, extra: &[(&str, &str)]) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        request
    }

    /// Sends `request` and reads the whole reply.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        tokio::time::timeout(PATIENCE, async {
            let response = request.send().await.unwrap();
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.text().await.unwrap_or_default();
            let messages = messages(&body);
            Reply {
                status,
                headers,
                body,
                messages,
            }
        })
        .await
        .expect("a reply in time")
    }

    /// POSTs a JSON body with `extra` headers.
    pub async fn post_json(&self, extra: &[(&str, &str)], body: &Value) -> Reply {
        self.send(self.post(extra).body(body.to_string())).await
    }

    /// `initialize` on the handshake-era path; the reply carries the session.
    pub async fn initialize_with(&self, extra: &[(&str, &str)]) -> Reply {
        let body = json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}
            }
        });
        self.post_json(extra, &body).await
    }

    /// Opens a handshake-era session: `initialize`, then `initialized`.
    pub async fn open_session(&self) -> String {
        let reply = self.initialize_with(&[]).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let session = reply.session().expect("a session id");
        let initialized = self
            .post_json(
                &[
                    ("mcp-session-id", &session),
                    ("mcp-protocol-version", LEGACY),
                ],
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await;
        assert_eq!(
            initialized.status,
            StatusCode::ACCEPTED,
            "{}",
            initialized.body
        );
        session
    }

    /// A JSON-RPC request on session `session`.
    pub async fn request(&self, session: &str, id: Value, method: &str, params: Value) -> Reply {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.post_json(
            &[
                ("mcp-session-id", session),
                ("mcp-protocol-version", LEGACY),
            ],
            &body,
        )
        .await
    }

    /// `tools/call` on session `session`; the JSON-RPC response.
    pub async fn call(&self, session: &str, id: Value, name: &str, arguments: Value) -> Value {
        let reply = self
            .request(
                session,
                id.clone(),
                "tools/call",
                json!({"name": name, "arguments": arguments}),
            )
            .await;
        reply
            .response(&id)
            .cloned()
            .unwrap_or_else(|| panic!("no response to {id}: {} {}", reply.status, reply.body))
    }

    /// The tool names session `session` is served.
    pub async fn tools(&self, session: &str) -> Vec<String> {
        let id = json!("list");
        let reply = self
            .request(session, id.clone(), "tools/list", json!({}))
            .await;
        tool_names(reply.response(&id).expect("a tools/list response"))
    }

    /// A stateless 2026-07-28 request (no session), with `extra` headers.
    pub async fn modern(
        &self,
        id: Value,
        method: &str,
        mut params: Value,
        extra: &[(&str, &str)],
    ) -> Reply {
        if let Some(params) = params.as_object_mut() {
            let mut meta = modern_meta();
            if let (Some(meta), Some(Value::Object(own))) =
                (meta.as_object_mut(), params.get("_meta"))
            {
                meta.extend(own.clone());
            }
            params.insert("_meta".to_owned(), meta);
        }
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut headers: Vec<(&str, &str)> =
            vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
        if let Some(name) = &name {
            headers.push(("mcp-name", name));
        }
        headers.extend_from_slice(extra);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.post_json(&headers, &body).await
    }

    /// A stateless `tools/call`; the JSON-RPC response.
    pub async fn modern_call(
        &self,
        id: Value,
        name: &str,
        arguments: Value,
        extra: &[(&str, &str)],
    ) -> Value {
        let reply = self
            .modern(
                id.clone(),
                "tools/call",
                json!({"name": name, "arguments": arguments}),
                extra,
            )
            .await;
        reply
            .response(&id)
            .cloned()
            .unwrap_or_else(|| panic!("no response to {id}: {} {}", reply.status, reply.body))
    }

    /// DELETE of session `session`.
    pub async fn delete(&self, session: &str) -> StatusCode {
        let response = self
            .client
            .delete(&self.url)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LEGACY)
            .send()
            .await
            .unwrap();
        response.status()
    }
}

/// The tool names in a `tools/list` response.
pub fn tool_names(response: &Value) -> Vec<String> {
    response["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A `tools/call` response's structured payload (the result or the error
/// payload of an `isError` result).
pub fn payload(response: &Value) -> &Value {
    &response["result"]["structuredContent"]
}

/// Waits (bounded) until `condition` holds, yielding between checks.
pub async fn eventually(what: &str, mut condition: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
