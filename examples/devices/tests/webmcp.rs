//! The console served to the agent in the browser through WebMCP: headless
//! Chromium started with `--enable-features=WebMCP` plays both the person
//! (WebDriver clicks) and the in-page agent (`document.modelContext`,
//! through scripts), against one running console.
//!
//! The in-page agent's tools follow what the person does, its calls run
//! through the registry's pipeline (invalid arguments are refused with
//! `INVALID_INPUT`, which the browser itself never checks), its request to
//! disable waits for the person's click in the page, and it cannot answer
//! its own request.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs
//! them); without them, or where this Chromium has no
//! `document.modelContext`, the test says it was skipped — unless
//! `CI=true`, where a missing browser fails it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod browser_support;

use browser_support::model_context::{execute, outcome, settle, start, tools, tools_until};
use browser_support::{
    Places, Session, answer, click, in_browser_with, script_fills_and_clicks, text, until,
};
use devices::{App, Status};
use fantoccini::Client;
use serde_json::{Value, json};

const DISABLE: &str = "domain_devices__disable";
const SELECT: &str = "view_devices__table__selectRows";
const READ_TABLE: &str = "view_devices__table__readState";

async fn toolchanges(page: &Client) -> u64 {
    page.execute("return window.__toolchanges || 0;", vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap()
}

async fn journey(page: Client, _mcp: Session, app: App, places: Places) {
    browser_support::sign_in(&page, &places).await;
    let has_api = page
        .execute(
            "return !!(document.modelContext && document.modelContext.registerTool);",
            vec![],
        )
        .await
        .unwrap();
    if has_api != json!(true) {
        eprintln!(
            "skipped: this Chromium has no document.modelContext with --enable-features=WebMCP"
        );
        return;
    }
    page.execute(
        "window.__toolchanges = 0;
         document.modelContext.addEventListener('toolchange', () => { window.__toolchanges += 1; });",
        vec![],
    )
    .await
    .unwrap();

    // The page lists what the in-page agent may use now: no disable
    // without a selection.
    tools_until(&page, "the devices tools are registered", |t| {
        t.iter().any(|n| n == SELECT) && t.iter().any(|n| n == READ_TABLE)
    })
    .await;
    assert!(!tools(&page).await.iter().any(|n| n == DISABLE));

    // The person ticks two rows: disable appears, and the browser says so.
    let before = toolchanges(&page).await;
    click(&page, "#select-d2").await;
    click(&page, "#select-d3").await;
    tools_until(&page, "ticking rows brings disable", |t| {
        t.iter().any(|n| n == DISABLE)
    })
    .await;
    assert!(toolchanges(&page).await > before, "no toolchange event");
    // The Agents panel says what the in-page agent may use, in words.
    until("the panel lists the in-page agent's tools", || async {
        text(&page, "#in-page-tools")
            .await
            .is_some_and(|t| t.contains("table: select rows") && t.contains("disable devices"))
    })
    .await;

    // A valid call runs through the pipeline as the in-page agent.
    let state = execute(&page, "read", READ_TABLE, json!({})).await;
    assert_eq!(state["isError"], false, "{state}");
    assert_eq!(
        state["structuredContent"]["selectedIds"],
        json!(["d2", "d3"]),
        "{state}"
    );
    // Invalid arguments reach the page (the browser checks nothing) and
    // the registry refuses them, with the exact payload.
    let refused = execute(&page, "bad", SELECT, json!({"nope": 1})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["structuredContent"]["code"], "INVALID_INPUT",
        "{refused}"
    );
    let refused = execute(&page, "bad-ids", SELECT, json!({"ids": "d1"})).await;
    assert_eq!(
        refused["structuredContent"]["code"], "INVALID_INPUT",
        "{refused}"
    );
    // Evidence smuggled into the arguments is no way around the person.
    let smuggled = execute(
        &page,
        "smuggled",
        DISABLE,
        json!({"confirmationId": "cnf_anything"}),
    )
    .await;
    assert_eq!(
        smuggled["structuredContent"]["code"], "INVALID_INPUT",
        "{smuggled}"
    );

    // The in-page agent asks to disable: the call waits for the person.
    start(&page, "disable", DISABLE, json!({})).await;
    until("the dialog asks the person", || async {
        text(&page, "#confirm-dialog #confirm-asker")
            .await
            .as_deref()
            == Some("In-page agent")
    })
    .await;
    // It says what asks: the name is the console's, not the agent's.
    assert!(
        text(&page, "#confirm-dialog #confirm-asker-note")
            .await
            .is_some_and(|note| note.contains("built into this browser")),
    );
    until("the dialog takes answers", || async {
        page.find(fantoccini::Locator::Css(
            "#confirm-dialog #deny[aria-disabled=false]",
        ))
        .await
        .is_ok()
    })
    .await;
    // Disabling needs proof that it is the person: there is no plain
    // approve button to click.
    assert!(
        page.find(fantoccini::Locator::Css("#approve"))
            .await
            .is_err()
    );
    // It tries to answer its own request the ways a page script can: it
    // fills the code field with a guess and clicks the code button (both
    // reach the server as the person's events would), and asks the
    // browser for a passkey assertion itself. Nothing is approved.
    script_fills_and_clicks(&page, "presence-code", "1234 5678", "approve-code").await;
    until("the guess is refused", || async {
        text(&page, "#presence-message")
            .await
            .is_some_and(|t| t.contains("That code is wrong"))
    })
    .await;
    let asserted = page
        .execute_async(
            "var done = arguments[arguments.length - 1]; \
             var stop = new AbortController(); \
             setTimeout(function () { stop.abort(); }, 1500); \
             navigator.credentials.get({signal: stop.signal, publicKey: {challenge: new Uint8Array(32), \
               userVerification: 'required', timeout: 1000}}) \
               .then(function () { done('answered'); }, function (e) { done(e.name); });",
            vec![],
        )
        .await
        .unwrap();
    assert_ne!(asserted, json!("answered"), "no passkey answers a script");
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(
        outcome(&page, "disable").await,
        None,
        "the call settled without the person"
    );
    assert_ne!(app.backend().get("d2").unwrap().status, Status::Disabled);
    assert!(
        page.find(fantoccini::Locator::Css(
            "#confirm-dialog[data-state='live']"
        ))
        .await
        .is_ok(),
        "the request is still waiting for the person"
    );

    // The person approves: the waiting call completes.
    answer(&page, "#approve").await;
    let settled = settle(&page, "disable").await;
    let result: Value = serde_json::from_str(settled["text"].as_str().unwrap()).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(app.backend().get("d2").unwrap().status, Status::Disabled);
    assert_eq!(app.backend().get("d3").unwrap().status, Status::Disabled);

    // Settings: the device tools leave the page's list.
    click(&page, "#nav-settings").await;
    tools_until(&page, "leaving /devices takes the device tools away", |t| {
        !t.iter()
            .any(|n| n == SELECT || n == DISABLE || n == READ_TABLE)
    })
    .await;
    click(&page, "#nav-devices").await;
    tools_until(&page, "coming back brings them back", |t| {
        t.iter().any(|n| n == SELECT)
    })
    .await;

    // Another tab takes the console over while a call of this page's
    // agent waits for the person: the request is withdrawn, this page's
    // tools go, and the waiting call settles CANCELLED (it is not left
    // waiting for ever).
    click(&page, "#select-d4").await;
    tools_until(&page, "ticking a row brings disable", |t| {
        t.iter().any(|n| n == DISABLE)
    })
    .await;
    // Two calls of the same tool; the agent gives up on one: the other
    // still waits (the browser's `toolcancel` names only the tool).
    page.execute(
        "const [name] = arguments;
         window.__outcomes.twin = null;
         window.__abort = new AbortController();
         document.modelContext.getTools().then(tools => {
           const tool = tools.find(t => t.name === name);
           return document.modelContext.executeTool(tool, {}, { signal: window.__abort.signal }).then(
             text => { window.__outcomes.twin = { text: text }; },
             error => { window.__outcomes.twin = { error: String(error) }; });
         });",
        vec![json!(DISABLE)],
    )
    .await
    .unwrap();
    start(&page, "left", DISABLE, json!({})).await;
    until("the dialog asks the person", || async {
        text(&page, "#confirm-dialog #confirm-asker")
            .await
            .as_deref()
            == Some("In-page agent")
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    page.execute("window.__abort.abort();", vec![])
        .await
        .unwrap();
    let twin = settle(&page, "twin").await;
    assert!(twin["error"].is_string(), "{twin}");
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(
        outcome(&page, "left").await,
        None,
        "the other call of the same tool was cancelled with it"
    );
    assert!(!app.registry().confirmations().pending().is_empty());
    let url = page.current_url().await.unwrap().to_string();
    let first = page.window().await.unwrap();
    let second = page.new_window(true).await.unwrap().handle;
    page.switch_to_window(second).await.unwrap();
    page.goto(&url).await.unwrap();
    click(&page, "#take-over").await;
    tools_until(&page, "the tab in front serves", |t| {
        t.iter().any(|n| n == SELECT)
    })
    .await;
    assert!(app.registry().confirmations().pending().is_empty());
    page.switch_to_window(first).await.unwrap();
    let settled = settle(&page, "left").await;
    let result: Value = serde_json::from_str(settled["text"].as_str().unwrap()).unwrap();
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["code"], "CANCELLED", "{result}");
    assert_eq!(tools(&page).await, Vec::<String>::new());
    assert_ne!(app.backend().get("d4").unwrap().status, Status::Disabled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_page_agent_operates_the_console_through_webmcp() {
    in_browser_with(&["--enable-features=WebMCP"], journey).await;
}
