//! Agent input nested a million levels deep, at every entry point, on a
//! small thread stack: each one measures nesting iteratively and refuses
//! before any recursive copy, conversion, print or drop (a recursive walk
//! of such a value overflows any stack and aborts the process).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // test code

mod support;

use agent_surface::adapter::ToolCall;
use agent_surface::adapter::bounds::dispose;
use agent_surface::context::{Consumer, ConsumerKind};
use agent_surface::error::ErrorCode;
use agent_surface::invoke::{Invocation, InvokeOptions};
use agent_surface::registry::{Mounted, Registry};
use agent_surface::toolset::{Toolset, Topology};
use agent_surface::webmcp::{PageAgent, PageMessage};
use serde_json::{Value, json};
use std::sync::Arc;
use support::User;
use tokio_util::sync::CancellationToken;

const LEVELS: usize = 1_000_000;
/// Smaller than any recursive walk of `LEVELS` levels could live in.
const STACK: usize = 256 << 10;
const SELECT: &str = "view_devices__table__selectRows";

/// `{"ids": [[[…]]]}`, `LEVELS` arrays deep, built without recursion.
fn deep() -> Value {
    let mut value = Value::Null;
    for _ in 0..LEVELS {
        value = Value::Array(vec![value]);
    }
    // Not `json!`: it copies what it interpolates, recursively.
    wrap("ids", value)
}

/// `{key: value}`, without copying `value`.
fn wrap(key: &str, value: Value) -> Value {
    let mut map = serde_json::Map::new();
    map.insert(key.to_owned(), value);
    Value::Object(map)
}

/// Runs `test` on a current-thread runtime on a thread of `STACK` bytes.
fn on_a_small_stack(test: impl AsyncFnOnce() + Send + 'static) {
    on_a_stack(STACK, test);
}

/// Runs `test` on a current-thread runtime on a thread of `stack` bytes.
fn on_a_stack(stack: usize, test: impl AsyncFnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_stack_size(stack)
                .build()
                .unwrap()
                .block_on(test());
        })
        .unwrap()
        .join()
        .expect("no overflow, no panic");
}

/// The devices console (the example's page and navigation) on the
/// example's registry for the admin, without the application's backend
/// session: an MCP handshake, whose frames a debug build cannot fit in
/// `STACK`, and which nothing here reaches (deep input is refused before
/// any procedure could run).
fn console() -> (Registry, Vec<Mounted>) {
    let registry = devices::registry_for(&User::admin(), |builder| builder);
    let backend = registry
        .host_context()
        .extension::<Arc<devices::Backend>>()
        .cloned()
        .expect("the registry names its backend");
    let mounted = devices::mount_console(&registry, &devices::Console::new(backend))
        .expect("the console mounts");
    (registry, mounted)
}

fn refused_as_too_deep(error: Option<&agent_surface::error::ErrorPayload>) {
    let error = error.expect("refused");
    assert_eq!(error.code(), ErrorCode::InvalidInput, "{error:?}");
}

#[test]
fn deep_arguments_are_refused_by_the_registry_the_toolset_and_a_tool_call() {
    on_a_small_stack(async || {
        let (registry, _mounted) = console();
        let registry = &registry;

        let result = registry
            .invoke(
                Invocation::new("view:devices.table.selectRows").input(deep()),
                InvokeOptions::default(),
            )
            .await;
        refused_as_too_deep(result.error());

        let toolset = Toolset::builder(registry)
            .consumer(Consumer::new(ConsumerKind::Other, "deep"))
            .topology(Topology::Remote)
            .build()
            .unwrap();
        let result = toolset.execute(SELECT, deep(), None).await;
        refused_as_too_deep(result.error());

        // Made, printed, run, run as a stale name, and dropped.
        let call = ToolCall::new(SELECT, deep()).invocation_id(Some("deep-1".into()));
        assert!(format!("{call:?}").len() < 4096);
        let result = call.run(&toolset, None, CancellationToken::new()).await;
        refused_as_too_deep(result.error());
        let stale = ToolCall::new("domain_gone__x", deep());
        let result = stale.run(&toolset, None, CancellationToken::new()).await;
        assert!(result.error().is_some());
        drop(call);
        drop(stale);
    });
}

#[test]
fn deep_page_messages_are_refused_by_the_webmcp_page_agent() {
    on_a_small_stack(async || {
        let (registry, _mounted) = console();
        let agent = PageAgent::new(&registry, "tab-deep", "In-page agent").unwrap();
        let mut message = wrap("arguments", deep());
        let fields = message.as_object_mut().unwrap();
        fields.insert("type".into(), json!("call"));
        fields.insert("call".into(), json!(7));
        fields.insert("name".into(), json!(SELECT));
        let parsed = PageMessage::parse(&message, 256);
        assert!(
            matches!(parsed, Some(PageMessage::TooDeep { call: 7, .. })),
            "{:?}",
            parsed.as_ref().map(std::mem::discriminant)
        );
        let result = agent.receive(&message).expect("a call").await;
        assert_eq!(result["call"], 7);
        assert_eq!(
            result["result"]["structuredContent"]["code"], "INVALID_INPUT",
            "{result}"
        );
        dispose(message);
    });
}

/// A `tools/call` whose arguments nest `levels` deep, as JSON text (built
/// as text: no value of that depth is ever made).
fn deep_call_text(id: u64, levels: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{SELECT}","arguments":{{"ids":{}null{}}}}}}}"#,
        "[".repeat(levels),
        "]".repeat(levels)
    )
}

#[test]
fn deep_mcp_requests_are_refused_over_http_and_the_server_serves_on() {
    // The HTTP server and client's own frames need more than `STACK` in a
    // debug build; still half a thread's default.
    on_a_stack(4 * STACK, async || {
        let served = support::serve(|builder| builder).await;
        let session = served.open_session().await;
        for (id, levels) in [(1, LEVELS), (2, 129), (3, 100)] {
            let reply = served
                .send(
                    served
                        .post(&[("mcp-session-id", &session)])
                        .body(deep_call_text(id, levels)),
                )
                .await;
            // Refused whole (over the body bound or the parser's nesting
            // bound) or answered with an error: never a crash.
            let refused = !reply.status.is_success()
                || reply
                    .messages
                    .iter()
                    .any(|m| m.get("error").is_some() || m["result"]["isError"] == true);
            assert!(refused, "{levels} levels: {} {}", reply.status, reply.body);
        }
        // Still serving.
        assert!(!served.tools(&session).await.is_empty());
        served.app.stop().await;
    });
}

#[test]
fn a_host_raising_the_depth_limit_gets_at_most_what_json_text_parses_to() {
    // A host that sets `max_input_depth` far above 128 gets 128: the walks
    // after the check (validation, copies, drops) stay within the stack.
    on_a_small_stack(async || {
        use agent_surface::registry::Limits;
        let registry = agent_surface::Registry::builder()
            .limits(Limits::default().max_input_depth(20_000))
            .build();
        assert_eq!(registry.limits().max_input_depth, 128);
        let console = devices::Console::new(Arc::new(devices::Backend::demo()));
        let _table = registry
            .mount(Arc::new(devices::DevicesTable(console)))
            .unwrap();
        let mut ids = Value::Null;
        for _ in 0..19_000 {
            ids = Value::Array(vec![ids]);
        }
        let result = registry
            .invoke(
                Invocation::new("view:devices.table.selectRows").input(wrap("ids", ids)),
                InvokeOptions::default(),
            )
            .await;
        refused_as_too_deep(result.error());
    });
}
