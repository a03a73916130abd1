//! The devices example in the page (`examples/devices-web`): its registry
//! runs in the browser, and Chromium with `--enable-features=WebMCP` plays
//! both the person (WebDriver clicks) and the in-page agent
//! (`document.modelContext`, through scripts). No server runs the app: the
//! test serves the built files and nothing else.
//!
//! The tool list follows the person's ticks and navigation and the agent's
//! own filters; valid calls run through the pipeline in the page and
//! invalid ones are refused typed; a disable waits for the person's answer
//! in the page's dialog, which the in-page agent has no way to give and a
//! script's click does not count as; the person approves (or denies) and
//! the waiting call settles accordingly.
//!
//! Needs the built app (`cargo run -p xtask -- devices-web`, which `.ci/run`
//! runs) and Debian's `chromium` and `chromium-driver`; without them the
//! test says it was skipped — unless `CI=true`, where it fails.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod browser_support;

use std::path::{Component, Path, PathBuf};

use browser_support::model_context::{execute, outcome, settle, start, tools, tools_until};
use browser_support::{browser, click, open_browser, start_driver, text, until};
use fantoccini::{Client, Locator};
use serde_json::{Value, json};

const READ_TABLE: &str = "view_fleet__table__read";
const SELECT: &str = "view_fleet__table__select";
const SET_FILTERS: &str = "view_fleet__filters__set";
const GO_TO: &str = "view_app__navigation__goTo";
const DISABLE: &str = "domain_devices__disable";

/// Where `cargo run -p xtask -- devices-web` puts the app.
fn built_app() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
        .join("devices-web")
}

/// The content type a browser needs for `file`.
fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        _ => "application/octet-stream",
    }
}

/// Serves the files under `dir` (and nothing else) on loopback: the port.
async fn serve_files(dir: PathBuf) -> u16 {
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let dir = dir.clone();
        async move {
            let wanted = Path::new(uri.path().trim_start_matches('/'));
            let safe = wanted
                .components()
                .all(|part| matches!(part, Component::Normal(_)));
            let file = if uri.path() == "/" {
                dir.join("index.html")
            } else {
                dir.join(wanted)
            };
            match std::fs::read(&file) {
                Ok(bytes) if safe || uri.path() == "/" => (
                    axum::http::StatusCode::OK,
                    [(axum::http::header::CONTENT_TYPE, content_type(&file))],
                    bytes,
                ),
                _ => (
                    axum::http::StatusCode::NOT_FOUND,
                    [(axum::http::header::CONTENT_TYPE, "text/plain")],
                    b"not found".to_vec(),
                ),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    port
}

/// The status the table shows for `id`.
async fn status(page: &Client, id: &str) -> Option<String> {
    text(page, &format!("#row-{id} td.status")).await
}

/// The ids of the rows the table shows.
async fn rows(page: &Client) -> Vec<String> {
    let found = page
        .execute(
            "return [...document.querySelectorAll('tbody tr')].map(r => r.id.replace('row-', ''));",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(found).unwrap()
}

/// The person answers the dialog with `button` (`#approve` or `#deny`),
/// clicking again while the dialog says the request had only just appeared.
async fn answer(page: &Client, button: &str) {
    until("the person's answer is taken", || async {
        if page.find(Locator::Css("#approval")).await.is_err() {
            return true;
        }
        if let Ok(found) = page.find(Locator::Css(button)).await {
            let _ = found.click().await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        page.find(Locator::Css("#approval")).await.is_err()
    })
    .await;
}

fn has(tools: &[String], name: &str) -> bool {
    tools.iter().any(|tool| tool == name)
}

async fn journey(page: &Client) {
    until("the page serves the browser's agent", || async {
        text(page, "#webmcp")
            .await
            .is_some_and(|t| t.contains("can use this page"))
    })
    .await;

    // What the in-page agent may use now: the table, the filters and the
    // navigation; no disable while nothing is ticked.
    tools_until(page, "the page's tools are registered", |t| {
        has(t, READ_TABLE) && has(t, SELECT) && has(t, SET_FILTERS) && has(t, GO_TO)
    })
    .await;
    assert!(!has(&tools(page).await, DISABLE));

    // The person ticks two rows: disable appears.
    click(page, "#tick-dev-2").await;
    click(page, "#tick-dev-3").await;
    tools_until(page, "ticking rows brings disable", |t| has(t, DISABLE)).await;

    // A valid call runs through the pipeline in the page.
    let state = execute(page, "read", READ_TABLE, json!({})).await;
    assert_eq!(state["isError"], false, "{state}");
    assert_eq!(
        state["structuredContent"]["selected"],
        json!(["dev-2", "dev-3"]),
        "{state}"
    );
    // Invalid arguments reach the page (the browser checks nothing) and
    // the registry refuses them, typed.
    let refused = execute(page, "bad", SELECT, json!({"nope": 1})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["structuredContent"]["code"], "INVALID_INPUT",
        "{refused}"
    );
    let refused = execute(page, "bad-ids", SELECT, json!({"ids": "dev-1"})).await;
    assert_eq!(
        refused["structuredContent"]["code"], "INVALID_INPUT",
        "{refused}"
    );
    // Arguments nested thousands deep (a few KB of JSON) are refused by
    // the page before anything walks them: the app lives on.
    let deep = page
        .execute_async(
            "const done = arguments[arguments.length - 1];
             let deep = 1; for (let i = 0; i < 4000; i++) { deep = [deep]; }
             document.modelContext.getTools().then(tools => {
               const tool = tools.find(t => t.name === arguments[0]);
               return document.modelContext.executeTool(tool, { deep });
             }).then(text => done(JSON.parse(text)), error => done({ error: String(error) }));",
            vec![json!(READ_TABLE)],
        )
        .await
        .unwrap();
    assert_eq!(deep["structuredContent"]["code"], "INVALID_INPUT", "{deep}");
    let state = execute(page, "after-deep", READ_TABLE, json!({})).await;
    assert_eq!(state["isError"], false, "{state}");
    // The table's ticks are the person's: the agent cannot name the devices.
    let locked = execute(page, "locked", DISABLE, json!({"deviceIds": ["dev-1"]})).await;
    assert_eq!(
        locked["structuredContent"]["code"], "INVALID_INPUT",
        "{locked}"
    );
    // Evidence smuggled into the arguments is no way around the person.
    let smuggled = execute(
        page,
        "smuggled",
        DISABLE,
        json!({"confirmationId": "cnf_anything"}),
    )
    .await;
    assert_eq!(
        smuggled["structuredContent"]["code"], "INVALID_INPUT",
        "{smuggled}"
    );

    // The agent filters: the page shows it, and the hidden tick leaves.
    let filtered = execute(
        page,
        "filter",
        SET_FILTERS,
        json!({"status": "online", "city": "turin"}),
    )
    .await;
    assert_eq!(filtered["isError"], false, "{filtered}");
    until("the table shows Turin's online devices", || async {
        rows(page).await == ["dev-2", "dev-5", "dev-11"]
    })
    .await;
    assert_eq!(
        text(page, "#selection").await.as_deref(),
        Some("1 selected")
    );
    let hidden = execute(page, "hidden", SELECT, json!({"ids": ["dev-3"]})).await;
    assert_eq!(
        hidden["structuredContent"]["code"], "PRECONDITION_FAILED",
        "{hidden}"
    );
    let all = execute(
        page,
        "all",
        SET_FILTERS,
        json!({"status": "all", "city": "all"}),
    )
    .await;
    assert_eq!(all["isError"], false, "{all}");
    until("the table shows every device", || async {
        rows(page).await.len() == 12
    })
    .await;

    // The person leaves for the about page: the table's tools go (the
    // navigation stays); back, they return.
    click(page, "#nav-about").await;
    tools_until(page, "leaving the devices page takes its tools", |t| {
        has(t, GO_TO) && !has(t, READ_TABLE) && !has(t, SET_FILTERS) && !has(t, DISABLE)
    })
    .await;
    click(page, "#nav-devices").await;
    tools_until(page, "coming back brings them back", |t| {
        has(t, READ_TABLE) && has(t, DISABLE)
    })
    .await;

    // The in-page agent asks to disable: the call waits for the person.
    start(page, "disable", DISABLE, json!({"reason": "maintenance"})).await;
    until("the dialog asks the person", || async {
        text(page, "#approval .who")
            .await
            .is_some_and(|t| t.starts_with("In-page agent asks"))
    })
    .await;
    // The agent has no tool to answer, and a name it makes up is refused:
    // the call still waits, and the device still runs.
    let listed = tools(page).await;
    assert!(
        listed
            .iter()
            .all(|t| !t.contains("approve") && !t.contains("confirm")),
        "{listed:?}"
    );
    let made_up = page
        .execute_async(
            "const done = arguments[arguments.length - 1];
             try {
               document.modelContext.executeTool({ name: 'approve' }, {}).then(
                 () => done('answered'), e => done(String(e)));
             } catch (e) { done(String(e)); }",
            vec![],
        )
        .await
        .unwrap();
    assert_ne!(made_up, json!("answered"));
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert_eq!(
        outcome(page, "disable").await,
        None,
        "settled without the person"
    );
    assert_eq!(status(page, "dev-2").await.as_deref(), Some("online"));
    // A script in the page presses Approve (after the dialog's answer
    // delay, both ways a script can): ignored, and the person is told.
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    page.execute(
        "const approve = document.querySelector('#approval #approve');
         approve.click();
         approve.dispatchEvent(new MouseEvent('click', { bubbles: true }));",
        vec![],
    )
    .await
    .unwrap();
    until("the dialog says the script's click was ignored", || async {
        text(page, "#approval .refused")
            .await
            .is_some_and(|t| t.contains("It was ignored"))
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(outcome(page, "disable").await, None, "a script approved");
    assert_eq!(status(page, "dev-2").await.as_deref(), Some("online"));
    // `DEVICES_WEB_SCREENSHOT=path.png` keeps what the person sees here.
    if let Some(path) = std::env::var_os("DEVICES_WEB_SCREENSHOT") {
        std::fs::write(path, page.screenshot().await.unwrap()).unwrap();
    }

    // The person approves: the waiting call completes, the page shows it.
    answer(page, "#approve").await;
    let settled = settle(page, "disable").await;
    let result: Value = serde_json::from_str(settled["text"].as_str().unwrap()).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["disabled"], 1, "{result}");
    until("the table shows dev-2 disabled", || async {
        status(page, "dev-2").await.as_deref() == Some("disabled")
    })
    .await;
    tools_until(page, "nothing ticked: disable goes", |t| !has(t, DISABLE)).await;

    // The person denies the next request: the call settles refused and
    // nothing changes.
    click(page, "#tick-dev-5").await;
    tools_until(page, "a tick brings disable back", |t| has(t, DISABLE)).await;
    start(page, "denied", DISABLE, json!({})).await;
    until("the dialog asks again", || async {
        page.find(Locator::Css("#approval #deny")).await.is_ok()
    })
    .await;
    // Focus is on Deny, the safe choice, and the page behind is inert.
    until("focus moves to Deny", || async {
        page.execute(
            "return document.activeElement && document.activeElement.id;",
            vec![],
        )
        .await
        .unwrap()
            == json!("deny")
    })
    .await;
    let inert = page
        .execute("return document.querySelector('main').inert;", vec![])
        .await
        .unwrap();
    assert_eq!(inert, json!(true), "the page behind the dialog takes input");
    // A script's Deny (or Escape) is ignored too: only the person answers.
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    page.execute(
        "document.querySelector('#approval #deny').click();
         document.querySelector('#approval').dispatchEvent(
           new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));",
        vec![],
    )
    .await
    .unwrap();
    until("the script's answer is ignored", || async {
        text(page, "#approval .refused")
            .await
            .is_some_and(|t| t.contains("It was ignored"))
    })
    .await;
    assert_eq!(outcome(page, "denied").await, None, "a script denied");
    // The person presses Escape: denied.
    page.active_element()
        .await
        .unwrap()
        .send_keys("\u{E00C}")
        .await
        .unwrap();
    let settled = settle(page, "denied").await;
    let result: Value = serde_json::from_str(settled["text"].as_str().unwrap()).unwrap();
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["code"], "CONFIRMATION_INVALID",
        "{result}"
    );
    assert_eq!(
        result["structuredContent"]["details"]["reason"], "denied",
        "{result}"
    );
    assert_eq!(status(page, "dev-5").await.as_deref(), Some("online"));

    // The agent picks the devices itself and asks: the person is told it
    // was the agent's choice. A request still waiting when the agent
    // navigates away is withdrawn: the dialog says so, and the call
    // settles without running.
    let chosen = execute(page, "choose", SELECT, json!({"ids": ["dev-5"]})).await;
    assert_eq!(chosen["isError"], false, "{chosen}");
    start(page, "left", DISABLE, json!({})).await;
    until("the dialog says the agent chose the devices", || async {
        text(page, "#approval .who")
            .await
            .is_some_and(|t| t.contains("The agent chose these devices"))
    })
    .await;
    let moved = execute(page, "away", GO_TO, json!({"page": "about"})).await;
    assert_eq!(moved["isError"], false, "{moved}");
    let settled = settle(page, "left").await;
    let result: Value = serde_json::from_str(settled["text"].as_str().unwrap()).unwrap();
    assert_eq!(result["isError"], true, "{result}");
    until("the dialog says the request ended", || async {
        text(page, "#approval .ended")
            .await
            .is_some_and(|t| t.contains("Nothing was done"))
    })
    .await;
    click(page, "#dismiss").await;
    click(page, "#nav-devices").await;
    until("dev-5 still runs", || async {
        status(page, "dev-5").await.as_deref() == Some("online")
    })
    .await;
}

/// The built app served on loopback and a browser with `extra` flags on
/// it; `None` (said) when either is missing outside CI.
async fn open_app(extra: &[&str]) -> Option<(browser_support::Driver, Client)> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let app = built_app();
    if !app.join("index.html").is_file() {
        assert!(
            !ci,
            "{} is not built: run `cargo run -p xtask -- devices-web`",
            app.display()
        );
        eprintln!(
            "skipped: the app is not built (cargo run -p xtask -- devices-web builds {})",
            app.display()
        );
        return None;
    }
    let (chromium, driver) = match browser() {
        Ok(found) => found,
        Err(why) => {
            assert!(!ci, "{why}");
            eprintln!("skipped: {why}");
            return None;
        }
    };
    let port = serve_files(app).await;
    let driver = start_driver(&driver).await;
    let page = open_browser(&driver, &chromium, extra).await;
    page.goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    Some((driver, page))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_adapter_003_the_registry_runs_in_the_page_and_serves_the_in_page_agent() {
    let Some((_driver, page)) = open_app(&["--enable-features=WebMCP"]).await else {
        return;
    };
    let has_api = page
        .execute(
            "return !!(document.modelContext && document.modelContext.registerTool);",
            vec![],
        )
        .await
        .unwrap();
    if has_api != json!(true) {
        let _ = page.close().await;
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "this Chromium has no document.modelContext with --enable-features=WebMCP"
        );
        eprintln!("skipped: this Chromium has no document.modelContext");
        return;
    }
    journey(&page).await;
    let _ = page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_adapter_003_without_webmcp_the_page_app_works_as_before() {
    let Some((_driver, page)) = open_app(&[]).await else {
        return;
    };
    until("the page says no agent can reach it", || async {
        text(&page, "#webmcp")
            .await
            .is_some_and(|t| t.contains("no WebMCP"))
    })
    .await;
    let absent = page
        .execute("return typeof document.modelContext;", vec![])
        .await
        .unwrap();
    assert_eq!(absent, json!("undefined"));
    // The person's app is unchanged: ticks, filters and pages work.
    click(&page, "#tick-dev-1").await;
    until("the tick shows", || async {
        text(&page, "#selection").await.as_deref() == Some("1 selected")
    })
    .await;
    click(&page, "#nav-about").await;
    until("the about page shows", || async {
        page.find(Locator::Css("#about")).await.is_ok()
    })
    .await;
    let _ = page.close().await;
}
