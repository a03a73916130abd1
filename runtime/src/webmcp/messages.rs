//! The messages between the page's glue and its [`PageAgent`](super::PageAgent):
//! what the page may send (parsed defensively: it relays what an agent
//! chose), the tool entries it registers, and call results in the shape
//! MCP clients read.

use serde_json::{Map, Value, json};

use crate::adapter::Tool;
use crate::invoke::InvocationResult;

/// One message from the page.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PageMessage {
    /// The page has `document.modelContext` and serves tools.
    Ready,
    /// The browser has no `document.modelContext`: the page works as
    /// before, without an in-page agent.
    Absent,
    /// The in-page agent called a tool.
    Call {
        /// The page's number for the call (its result names it).
        call: u64,
        /// The tool's wire name.
        name: String,
        /// The arguments as the agent sent them (validated by the
        /// pipeline, never here).
        arguments: Value,
    },
    /// The in-page agent called a tool with arguments the page would not
    /// send (over twice the registry's input limit as JSON): only the call
    /// came, and it is refused as the pipeline refuses a large input.
    TooLarge {
        /// The page's number for the call.
        call: u64,
        /// The tool's wire name.
        name: String,
    },
    /// The in-page agent called a tool with arguments nesting deeper than
    /// the page sends (the tools message's `maxArgumentDepth`, one over the
    /// registry's input depth) or than any JSON text parses to
    /// ([`PARSE_DEPTH`](crate::adapter::bounds::PARSE_DEPTH)): refused as
    /// the pipeline refuses a deep input, without copying them.
    TooDeep {
        /// The page's number for the call.
        call: u64,
        /// The tool's wire name.
        name: String,
    },
    /// The in-page agent gave up on a call (`toolcancel`, an abort).
    Cancel {
        /// The page's number for the call.
        call: u64,
    },
}

impl PageMessage {
    /// Reads a message; `None` for anything else, for a call number that is
    /// not a non-negative integer, or for a tool name over `max_name_bytes`.
    /// Arguments are measured iteratively before they are copied: nested
    /// deeper than [`PARSE_DEPTH`](crate::adapter::bounds::PARSE_DEPTH),
    /// the call comes as [`PageMessage::TooDeep`].
    ///
    /// ```
    /// use agent_surface::webmcp::PageMessage;
    /// use serde_json::json;
    ///
    /// let call = json!({"type": "call", "call": 3, "name": "t", "arguments": {"a": 1}});
    /// assert!(matches!(PageMessage::parse(&call, 256), Some(PageMessage::Call { call: 3, .. })));
    /// assert_eq!(PageMessage::parse(&json!({"type": "call", "call": -1, "name": "t"}), 256), None);
    /// ```
    pub fn parse(message: &Value, max_name_bytes: usize) -> Option<PageMessage> {
        let kind = message.get("type")?.as_str()?;
        match kind {
            "ready" => Some(PageMessage::Ready),
            "absent" => Some(PageMessage::Absent),
            "cancel" => Some(PageMessage::Cancel {
                call: message.get("call")?.as_u64()?,
            }),
            "call" => {
                let name = message.get("name")?.as_str()?;
                if name.len() > max_name_bytes {
                    return None;
                }
                if message.get("tooDeep").and_then(Value::as_bool) == Some(true) {
                    return Some(PageMessage::TooDeep {
                        call: message.get("call")?.as_u64()?,
                        name: name.to_owned(),
                    });
                }
                if message.get("tooLarge").and_then(Value::as_bool) == Some(true) {
                    return Some(PageMessage::TooLarge {
                        call: message.get("call")?.as_u64()?,
                        name: name.to_owned(),
                    });
                }
                let call = message.get("call")?.as_u64()?;
                let arguments = message.get("arguments");
                if arguments.is_some_and(|arguments| {
                    !crate::adapter::bounds::depth_within(
                        arguments,
                        crate::adapter::bounds::PARSE_DEPTH,
                    )
                }) {
                    return Some(PageMessage::TooDeep {
                        call,
                        name: name.to_owned(),
                    });
                }
                Some(PageMessage::Call {
                    call,
                    name: name.to_owned(),
                    // Arguments that are not an object reach the pipeline
                    // as they are, and are refused there with the exact
                    // issue.
                    arguments: arguments
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Map::new())),
                })
            }
            _ => None,
        }
    }
}

/// The entry the page registers for `tool`: `name`, `description`,
/// `inputSchema` and `annotations` (`readOnlyHint`), as
/// `document.modelContext.registerTool` takes them (the page adds
/// `execute`).
pub fn tool_entry(tool: &Tool) -> Value {
    let read_only = tool.hints().is_some_and(|hints| hints.read_only);
    json!({
        "name": tool.name(),
        "description": tool.description(),
        "inputSchema": tool.input_schema(),
        "annotations": { "readOnlyHint": read_only },
    })
}

/// A call's result in the shape MCP clients read: an ok call is the output
/// as structured content (and as text); a capability error is an
/// `isError` result whose structured content is the exact payload.
///
/// ```
/// use agent_surface::error::ErrorPayload;
///
/// let registry = agent_surface::Registry::default();
/// let failed = agent_surface::adapter::refused(&registry, "t", None, ErrorPayload::not_found());
/// let shaped = agent_surface::webmcp::call_result(&failed);
/// assert_eq!(shaped["isError"], true);
/// assert_eq!(shaped["structuredContent"]["code"], "CAPABILITY_NOT_FOUND");
/// ```
pub fn call_result(result: &InvocationResult) -> Value {
    let (structured, is_error) = match result.error() {
        Some(error) => (serde_json::to_value(error).ok(), true),
        None => match result.output() {
            Some(output @ Value::Object(_)) => (Some(output.clone()), false),
            Some(other) => {
                return json!({
                    "content": [{"type": "text", "text": other.to_string()}],
                    "isError": false,
                });
            }
            None => {
                return json!({
                    "content": [{"type": "text", "text": "ok"}],
                    "isError": false,
                });
            }
        },
    };
    let structured = structured.unwrap_or(Value::Null);
    json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured,
        "isError": is_error,
    })
}

/// The result message of call number `call`.
pub(super) fn result_message(call: u64, result: &InvocationResult) -> Value {
    json!({ "type": "result", "call": call, "result": call_result(result) })
}
