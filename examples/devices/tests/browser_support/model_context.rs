//! The in-page agent, as a script plays it: the tools the browser's
//! `document.modelContext` lists for the page, and `executeTool` calls
//! whose outcomes the test reads back (Chromium with
//! `--enable-features=WebMCP`).

use fantoccini::Client;
use serde_json::{Value, json};

use super::PATIENCE;

/// The tools the browser lists for the page, by name.
pub async fn tools(page: &Client) -> Vec<String> {
    let listed = page
        .execute_async(
            "const done = arguments[arguments.length - 1];
             document.modelContext.getTools().then(
               tools => done(tools.map(tool => tool.name)),
               error => done(['error: ' + error]));",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(listed).unwrap()
}

/// Starts `executeTool(name, arguments)` as the in-page agent; its outcome
/// lands in `window.__outcomes[slot]` (the JSON the browser resolves with,
/// or the error it rejects with).
pub async fn start(page: &Client, slot: &str, name: &str, arguments: Value) {
    page.execute(
        "const [slot, name, args] = arguments;
         window.__outcomes = window.__outcomes || {};
         window.__outcomes[slot] = null;
         document.modelContext.getTools().then(tools => {
           const tool = tools.find(t => t.name === name);
           if (!tool) { window.__outcomes[slot] = { missing: name }; return; }
           return document.modelContext.executeTool(tool, args).then(
             text => { window.__outcomes[slot] = { text: text }; },
             error => { window.__outcomes[slot] = { error: String(error) }; });
         });",
        vec![json!(slot), json!(name), arguments],
    )
    .await
    .unwrap();
}

/// The outcome of a started call, once there is one.
pub async fn outcome(page: &Client, slot: &str) -> Option<Value> {
    let found = page
        .execute(
            "return (window.__outcomes || {})[arguments[0]] || null;",
            vec![json!(slot)],
        )
        .await
        .unwrap();
    (!found.is_null()).then_some(found)
}

/// Waits for the outcome of a started call.
pub async fn settle(page: &Client, slot: &str) -> Value {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if let Some(settled) = outcome(page, slot).await {
            return settled;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "call {slot} never settled"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Runs `executeTool` to the end: the MCP-shaped result the page returned.
pub async fn execute(page: &Client, slot: &str, name: &str, arguments: Value) -> Value {
    start(page, slot, name, arguments).await;
    let settled = settle(page, slot).await;
    let text = settled["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} did not resolve with text: {settled}"));
    serde_json::from_str(text).unwrap()
}

/// Waits until the browser's tool list satisfies `expected`.
pub async fn tools_until(page: &Client, what: &str, expected: impl Fn(&[String]) -> bool) {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let last = tools(page).await;
        if expected(&last) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: the page lists {last:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
