//! Conversions between the surface and MCP: tools with annotations, call
//! results with the exact payload, confirmation elicitation forms, and
//! stale wire names back to capability ids.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ElicitationAction, ElicitationSchema, ProtocolVersion, Tool as McpTool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use serde_json::{Map, Value};

use crate::adapter::Tool;
use crate::error::ErrorCode;
use crate::invoke::InvocationResult;

/// Tool annotations from effect and kind.
fn annotations(tool: &Tool) -> Option<ToolAnnotations> {
    let hints = tool.hints()?;
    Some(
        ToolAnnotations::new()
            .read_only(hints.read_only)
            .destructive(hints.destructive)
            .idempotent(hints.idempotent)
            .open_world(hints.open_world),
    )
}

pub(super) fn to_mcp_tool(tool: &Tool) -> McpTool {
    let schema = match tool.input_schema() {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let mut mcp = McpTool::new(
        tool.name().to_owned(),
        tool.description().to_owned(),
        Arc::new(schema),
    );
    if let Some(annotations) = annotations(tool) {
        mcp = mcp.with_annotations(annotations);
    }
    mcp
}

/// A pipeline result as an MCP tool result: structured output, or an
/// `isError` result with the exact payload.
pub(super) fn to_call_result(result: &InvocationResult) -> CallToolResult {
    match result.error() {
        Some(error) => {
            CallToolResult::structured_error(serde_json::to_value(error).unwrap_or(Value::Null))
        }
        None => match result.output() {
            Some(Value::Object(output)) => {
                CallToolResult::structured(Value::Object(output.clone()))
            }
            Some(other) => {
                CallToolResult::success(vec![rmcp::model::ContentBlock::text(other.to_string())])
            }
            None => CallToolResult::success(vec![rmcp::model::ContentBlock::text("ok")]),
        },
    }
}

/// The confirmation id of a `CONFIRMATION_REQUIRED` result.
pub(super) fn confirmation_of(result: &InvocationResult) -> Option<String> {
    result
        .error()
        .filter(|error| error.code() == ErrorCode::ConfirmationRequired)
        .and_then(|error| error.detail("confirmationId"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The elicitation form: approve or not.
pub(super) fn approval_schema() -> Option<ElicitationSchema> {
    ElicitationSchema::builder()
        .required_bool("approve")
        .build()
        .ok()
}

/// Whether an elicitation answer approves.
pub(super) fn approves(action: ElicitationAction, content: Option<&Value>) -> bool {
    action == ElicitationAction::Accept
        && content
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
}

pub(super) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// A fresh input-request state: `rs_` and 128 random bits as hex (`None`
/// without system randomness: the call then answers two-phase).
pub(super) fn secret_state() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let mut state = String::with_capacity(3 + 32);
    state.push_str("rs_");
    for byte in bytes {
        use std::fmt::Write as _;
        let _ = write!(state, "{byte:02x}");
    }
    Some(state)
}
