//! Tools and results in the shapes the major model APIs accept.
//!
//! Tool definitions (name, description, schema) are what providers cache;
//! live state goes in a separate message ([`state_summary`]) so the cached
//! block stays byte-identical while availability changes.
//!
//! ```
//! use agent_surface::toolset::render;
//! use agent_surface::{ErrorCode, ErrorPayload};
//! # use agent_surface::prelude::*;
//! # use agent_surface::toolset::{Toolset, Topology};
//! # /// A counter.
//! # #[agent_component(type = "demo.counter")]
//! # impl Counter {
//! #     /// The value.
//! #     #[observation]
//! #     fn value(&self) -> u64 { 7 }
//! # }
//! # struct Counter;
//! # let registry = Registry::default();
//! # let _m = registry.mount(std::sync::Arc::new(Counter)).unwrap();
//! # let toolset = Toolset::builder(&registry).topology(Topology::Remote).build().unwrap();
//! let tools = toolset.tools();
//! let anthropic = render::anthropic_tools(&tools);
//! assert_eq!(anthropic[0]["name"], "view_demo__counter__value");
//! assert!(anthropic[0]["input_schema"].is_object());
//! let openai = render::openai_tools(&tools);
//! assert_eq!(openai[0]["type"], "function");
//! assert_eq!(openai[0]["function"]["parameters"]["type"], "object");
//! ```

use serde_json::{Value, json};

use crate::adapter::Tool;
use crate::invoke::InvocationResult;

/// Anthropic Messages API `tools`: `[{name, description, input_schema}]`.
pub fn anthropic_tools(tools: &[Tool]) -> Value {
    each(tools, |tool| {
        json!({
            "name": tool.name(),
            "description": tool.description(),
            "input_schema": tool.input_schema(),
        })
    })
}

/// One JSON value per tool, as an array.
fn each(tools: &[Tool], render: impl Fn(&Tool) -> Value) -> Value {
    Value::Array(tools.iter().map(render).collect())
}

/// OpenAI Chat Completions `tools`:
/// `[{type: "function", function: {name, description, parameters}}]`.
pub fn openai_tools(tools: &[Tool]) -> Value {
    each(tools, |tool| {
        json!({
            "type": "function",
            "function": {
                "name": tool.name(),
                "description": tool.description(),
                "parameters": tool.input_schema(),
            }
        })
    })
}

/// OpenAI Responses API `tools`: `[{type: "function", name, description, parameters}]`.
pub fn openai_responses_tools(tools: &[Tool]) -> Value {
    each(tools, |tool| {
        json!({
            "type": "function",
            "name": tool.name(),
            "description": tool.description(),
            "parameters": tool.input_schema(),
        })
    })
}

/// The result envelope as JSON text (the payload providers get, intact).
fn envelope(result: &InvocationResult) -> String {
    serde_json::to_string(result).unwrap_or_else(|_| "{\"status\":\"error\"}".to_owned())
}

/// An Anthropic `tool_result` content block; errors carry `is_error: true`
/// and the whole envelope (code, retry, details) as text.
pub fn anthropic_tool_result(tool_use_id: &str, result: &InvocationResult) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": [{"type": "text", "text": envelope(result)}],
    });
    if !result.is_ok()
        && let Value::Object(map) = &mut block
    {
        map.insert("is_error".to_owned(), Value::Bool(true));
    }
    block
}

/// An OpenAI Chat Completions `tool` message. The API has no error flag:
/// the envelope's `status: "error"` and `error` object say it.
pub fn openai_tool_result(tool_call_id: &str, result: &InvocationResult) -> Value {
    json!({
        "role": "tool",
        "tool_call_id": tool_call_id,
        "content": envelope(result),
    })
}

/// An OpenAI Responses API `function_call_output` item.
pub fn openai_responses_tool_result(call_id: &str, result: &InvocationResult) -> Value {
    json!({
        "type": "function_call_output",
        "call_id": call_id,
        "output": envelope(result),
    })
}

/// The volatile part, for a message outside the cached tool block: one
/// line per tool that is unavailable or carries a note.
pub fn state_summary(tools: &[Tool]) -> String {
    let mut lines = Vec::new();
    for tool in tools {
        let state = tool.state();
        match (&state.unavailable_reason, &state.note) {
            (Some(reason), _) if !state.available => {
                lines.push(format!("- {}: unavailable — {reason}", tool.name()));
            }
            (_, Some(note)) => lines.push(format!("- {}: {note}", tool.name())),
            _ => {}
        }
    }
    if lines.is_empty() {
        "Every tool is available.".to_owned()
    } else {
        format!("Tool state now:\n{}", lines.join("\n"))
    }
}
