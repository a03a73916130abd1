//! The backend's MCP face: its domain operations as MCP tools, written with
//! rmcp's own `#[tool]` macros. One server per user session; the backend
//! re-validates every input and enforces its own authorization, whatever
//! the client decided.

use std::sync::{Arc, Mutex};

use agent_surface::procedure::Procedure;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_type;
use rmcp::model::{
    CallToolResult, JsonObject, RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::{Json, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};

use crate::backend::Backend;
use crate::domain::{DEVICES_WRITE, DisableDevices, Disabled};

/// The signed-in user of a session, as the backend knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// The user id.
    pub id: String,
    /// What the backend lets this user do.
    pub permissions: Vec<String>,
}

impl User {
    /// A user with permissions.
    pub fn new(id: &str, permissions: &[&str]) -> User {
        User {
            id: id.to_owned(),
            permissions: permissions.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    /// The demo administrator: may read and disable devices.
    pub fn admin() -> User {
        User::new("admin", &["devices:read", "devices:write"])
    }

    /// The demo viewer: may only read.
    pub fn viewer() -> User {
        User::new("viewer", &["devices:read"])
    }

    fn may(&self, permission: &str) -> bool {
        self.permissions.iter().any(|p| p == permission)
    }
}

/// One call as the backend received it: the raw arguments and `_meta`.
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    /// The tool.
    pub tool: String,
    /// The arguments, exactly as they arrived.
    pub arguments: Value,
    /// The request's `_meta`.
    pub meta: Value,
}

/// The MCP server of one user session.
#[derive(Clone)]
pub struct BackendServer {
    backend: Arc<Backend>,
    user: User,
    received: Arc<Mutex<Vec<Received>>>,
    /// While `true`, calls wait before doing anything (tests hold the
    /// backend to observe queues and timeouts).
    held: Arc<tokio::sync::watch::Sender<bool>>,
    /// How many calls arrived, for tests that wait for one.
    arrived: Arc<tokio::sync::watch::Sender<usize>>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for BackendServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendServer")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

fn refusal(code: &str, message: String) -> CallToolResult {
    CallToolResult::structured_error(json!({"code": code, "message": message}))
}

#[tool_router]
impl BackendServer {
    /// A session of `user` on `backend`.
    pub fn new(backend: Arc<Backend>, user: User) -> BackendServer {
        BackendServer {
            backend,
            user,
            received: Arc::default(),
            held: Arc::new(tokio::sync::watch::channel(false).0),
            arrived: Arc::new(tokio::sync::watch::channel(0).0),
            tool_router: Self::tool_router(),
        }
    }

    /// Makes calls wait until [`release`](Self::release).
    pub fn hold(&self) {
        self.held.send_replace(true);
    }

    /// Lets waiting calls proceed.
    pub fn release(&self) {
        self.held.send_replace(false);
    }

    /// Waits until at least `count` calls have arrived.
    pub async fn arrived(&self, count: usize) {
        let mut arrived = self.arrived.subscribe();
        let _ = arrived.wait_for(|n| *n >= count).await;
    }

    /// Every call this session received, in order.
    pub fn received(&self) -> Vec<Received> {
        self.received
            .lock()
            .map(|received| received.clone())
            .unwrap_or_default()
    }

    /// Disables devices after checking the caller and the input itself.
    #[tool(
        name = "devices.disable",
        description = <DisableDevices as Procedure>::contract().description(),
        input_schema = schema_for_type::<DisableDevices>(),
        annotations(destructive_hint = true, read_only_hint = false)
    )]
    async fn disable(
        &self,
        arguments: JsonObject,
        meta: RequestMetaObject,
    ) -> Result<Json<Disabled>, CallToolResult> {
        if let Ok(mut received) = self.received.lock() {
            received.push(Received {
                tool: "devices.disable".to_owned(),
                arguments: Value::Object(arguments.clone()),
                meta: Value::Object(meta.0.0.clone()),
            });
        }
        self.arrived.send_modify(|n| *n += 1);
        let mut held = self.held.subscribe();
        let _ = held.wait_for(|held| !*held).await;
        if !self.user.may(DEVICES_WRITE) {
            return Err(refusal(
                "forbidden",
                format!("{} may not disable devices", self.user.id),
            ));
        }
        // Re-validate: the client is never a security boundary.
        let input: DisableDevices = serde_json::from_value(Value::Object(arguments))
            .map_err(|err| refusal("invalid-input", err.to_string()))?;
        if input.device_ids.is_empty() {
            return Err(refusal("invalid-input", "deviceIds is empty".to_owned()));
        }
        let unknown: Vec<&str> = input
            .device_ids
            .iter()
            .filter(|id| self.backend.get(id).is_none())
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(refusal(
                "not-found",
                format!("unknown devices: {}", unknown.join(", ")),
            ));
        }
        let disabled = self.backend.disable(&input.device_ids);
        Ok(Json(Disabled {
            disabled: u32::try_from(disabled).unwrap_or(u32::MAX),
        }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for BackendServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}
