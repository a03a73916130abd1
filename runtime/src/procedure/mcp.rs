//! A procedure executor over MCP (feature `mcp-client`, or `mcp`): the
//! backend exposes its domain operations as MCP tools; calls go through
//! `tools/call` on the user's own session.
//!
//! - **Manifest** — from the backend's `tools/list`. Tool `devices.disable`
//!   is procedure `domain:devices.disable` (names that are not procedure
//!   paths are skipped). The description and schemas are the tool's. The
//!   effect is inferred from the annotations (read-only → server-query,
//!   destructive → destructive, open-world → external-side-effect,
//!   otherwise server-mutation; hints the declared contract may make more
//!   dangerous, never less) unless the tool states it in
//!   `_meta["agentSurface/effect"]`; `_meta["agentSurface/confirmation"]`
//!   states the least confirmation posture the backend accepts.
//! - **Calls** — arguments are the validated effective input. The request's
//!   `_meta` carries `agentSurface/invocationId` and, when the user
//!   approved, `agentSurface/confirmation: {id, approvedAt}` — information
//!   for the backend, never authorization. Cancellation drops the request,
//!   which sends `notifications/cancelled`.
//! - **Results** — `structuredContent` (else the first text block, parsed
//!   as JSON when it is JSON) is the output. A tool error (`isError: true`)
//!   whose structured content is `{code, message?}` becomes
//!   [`ProcedureError::Server`] with that code; the code
//!   `approval-required` (with an optional `summary`) is the backend asking
//!   for the user's approval. JSON-RPC errors (e.g. rejected arguments) are
//!   server errors with the numeric code; a closed session is a transport
//!   error.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agent_surface::procedure::mcp::McpExecutor;
//! use agent_surface::Registry;
//! use rmcp::{RoleClient, service::RunningService};
//!
//! // `session`: the user's authenticated MCP session with the backend
//! // (`().serve(transport).await?` with rmcp's transport of your choice).
//! # async fn connect(
//! #     session: RunningService<RoleClient, ()>,
//! # ) -> Result<(), Box<dyn std::error::Error>> {
//! let executor = McpExecutor::connect(session.peer().clone()).await?;
//! let registry = Registry::default();
//! let mismatches = registry.set_procedure_executor(Some(Arc::new(executor)));
//! assert!(mismatches.is_empty());
//! # Ok(())
//! # }
//! ```

use std::fmt;

use agent_surface_rules::ids::check_procedure_path;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{Peer, ServiceError};
use serde_json::{Map, Value};

use super::{EffectSource, ExecuteFuture, ManifestEntry, ProcedureCall, ProcedureError};
use super::{ProcedureExecutor, ProcedureManifest};
use agent_surface_rules::{Confirmation, Effect};

/// The `_meta` key of a tool's stated effect.
pub const EFFECT_META: &str = "agentSurface/effect";
/// The `_meta` key of a tool's least accepted confirmation posture.
pub const CONFIRMATION_META: &str = "agentSurface/confirmation";
/// The request `_meta` key of the invocation id.
pub const INVOCATION_META: &str = "agentSurface/invocationId";
/// The request `_meta` key of the user's approval.
pub const EVIDENCE_META: &str = "agentSurface/confirmation";
/// The tool-error code by which a backend asks for the user's approval.
pub const APPROVAL_REQUIRED: &str = "approval-required";

/// Why connecting the executor failed.
#[derive(Debug)]
pub struct McpExecutorError(ServiceError);

impl fmt::Display for McpExecutorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "listing the backend's tools failed: {}", self.0)
    }
}

impl std::error::Error for McpExecutorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Executes procedures as MCP tool calls on one client session.
#[derive(Debug)]
pub struct McpExecutor {
    peer: Peer<RoleClient>,
    manifest: ProcedureManifest,
}

impl McpExecutor {
    /// Lists the backend's tools (every page) and builds the manifest.
    pub async fn connect(peer: Peer<RoleClient>) -> Result<McpExecutor, McpExecutorError> {
        let tools = peer.list_all_tools().await.map_err(McpExecutorError)?;
        Ok(McpExecutor::from_tools(peer, &tools))
    }

    /// An executor over an already listed set of tools.
    pub fn from_tools(peer: Peer<RoleClient>, tools: &[Tool]) -> McpExecutor {
        McpExecutor {
            peer,
            manifest: tools.iter().filter_map(manifest_entry).collect(),
        }
    }

    /// The client session.
    pub fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }
}

/// The manifest entry of one tool, if its name is a procedure path.
pub fn manifest_entry(tool: &Tool) -> Option<ManifestEntry> {
    check_procedure_path(&tool.name).ok()?;
    let mut entry = ManifestEntry::new(format!("domain:{}", tool.name))
        .input_schema(Value::Object((*tool.input_schema).clone()));
    if let Some(description) = &tool.description {
        entry = entry.description(description.to_string());
    }
    if let Some(output) = &tool.output_schema {
        entry = entry.output_schema(Value::Object((**output).clone()));
    }
    let meta = tool.meta.as_ref().map(|meta| &meta.0);
    let stated = meta
        .and_then(|meta| meta.get(EFFECT_META))
        .and_then(Value::as_str)
        .and_then(Effect::parse);
    let effect = match stated {
        Some(effect) => (effect, EffectSource::Stated),
        None => (inferred_effect(tool), EffectSource::Inferred),
    };
    entry = entry.effect(effect.0, effect.1);
    if let Some(confirmation) = meta
        .and_then(|meta| meta.get(CONFIRMATION_META))
        .and_then(Value::as_str)
        .and_then(Confirmation::parse)
    {
        entry = entry.confirmation(confirmation);
    }
    Some(entry)
}

/// The effect the annotations suggest (only explicit `true` hints count).
fn inferred_effect(tool: &Tool) -> Effect {
    let Some(hints) = &tool.annotations else {
        return Effect::ServerMutation;
    };
    if hints.read_only_hint == Some(true) {
        Effect::ServerQuery
    } else if hints.destructive_hint == Some(true) {
        Effect::Destructive
    } else if hints.open_world_hint == Some(true) {
        Effect::ExternalSideEffect
    } else {
        Effect::ServerMutation
    }
}

impl ProcedureExecutor for McpExecutor {
    fn manifest(&self) -> &ProcedureManifest {
        &self.manifest
    }

    fn execute(&self, call: ProcedureCall) -> ExecuteFuture {
        let peer = self.peer.clone();
        Box::pin(async move {
            let Some(name) = call.procedure_id.strip_prefix("domain:") else {
                return Err(ProcedureError::Transport(format!(
                    "`{}` is not a domain procedure",
                    call.procedure_id
                )));
            };
            let Value::Object(arguments) = call.input else {
                return Err(ProcedureError::Transport(
                    "the effective input is not a JSON object".to_owned(),
                ));
            };
            let mut meta = Map::new();
            meta.insert(
                INVOCATION_META.to_owned(),
                Value::from(&*call.invocation_id),
            );
            if let Some(evidence) = &call.evidence {
                meta.insert(
                    EVIDENCE_META.to_owned(),
                    serde_json::json!({"id": evidence.id, "approvedAt": evidence.approved_at}),
                );
            }
            let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
            params.meta = Some(meta.into());
            // Dropping the request (cancellation) notifies the backend.
            let answer = tokio::select! {
                answer = peer.call_tool(params) => answer,
                () = call.cancellation.cancelled() => return Err(ProcedureError::Cancelled),
            };
            match answer {
                Ok(result) => outcome(result),
                Err(ServiceError::McpError(error)) => Err(ProcedureError::Server {
                    code: Some(error.code.0.to_string()),
                    message: error.message.into_owned(),
                    data: error.data,
                }),
                Err(ServiceError::Cancelled { .. }) => Err(ProcedureError::Cancelled),
                Err(other) => Err(ProcedureError::Transport(other.to_string())),
            }
        })
    }
}

/// A tool result as a procedure outcome.
fn outcome(result: CallToolResult) -> Result<Value, ProcedureError> {
    let text = || -> Option<String> {
        result
            .content
            .iter()
            .find_map(|block| block.as_text().map(|text| text.text.clone()))
    };
    let payload = result
        .structured_content
        .clone()
        .or_else(|| text().map(|text| serde_json::from_str(&text).unwrap_or(Value::String(text))));
    if result.is_error != Some(true) {
        return Ok(payload.unwrap_or(Value::Null));
    }
    let field = |key: &str| {
        payload
            .as_ref()
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let code = field("code");
    if code.as_deref() == Some(APPROVAL_REQUIRED) {
        return Err(ProcedureError::ApprovalRequired {
            summary: field("summary"),
        });
    }
    let message = field("message")
        .or_else(|| text().filter(|_| code.is_none()))
        .unwrap_or_else(|| "the tool reported an error".to_owned());
    Err(ProcedureError::Server {
        code,
        message,
        data: payload,
    })
}
