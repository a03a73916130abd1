//! The web console in a real browser: headless Chromium driven through
//! WebDriver plays the person while an rmcp client plays the agent over
//! MCP streamable HTTP, against one running console.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs
//! them). Without them the test says it was skipped — unless `CI=true`,
//! where their absence fails it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_surface::mcp::McpServer;
use devices::{App, Status, User, web};
use fantoccini::{Client, ClientBuilder, Locator};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

/// How long any one expected change may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(15);

/// A program on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Chromium and its driver, or why the test cannot run.
fn browser() -> Result<(PathBuf, PathBuf), String> {
    let chromium = on_path("chromium").ok_or("chromium is not installed")?;
    let driver = on_path("chromedriver").ok_or("chromedriver is not installed")?;
    Ok((chromium, driver))
}

/// chromedriver in its own process group, killed with its browsers on drop.
struct Driver {
    child: Child,
    url: String,
    profile: PathBuf,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

async fn start_driver(driver: &Path) -> Driver {
    use std::os::unix::process::CommandExt;
    let port = free_port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("chromedriver starts");
    let profile =
        std::env::temp_dir().join(format!("devices-browser-{}-{port}", std::process::id()));
    let started = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
        profile,
    };
    let deadline = Instant::now() + PATIENCE;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "chromedriver did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started
}

async fn open_browser(driver: &Driver, chromium: &Path) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("chrome"));
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--window-size=1280,860",
                // A foreign site on this machine, for the attack steps.
                "--host-resolver-rules=MAP evil.example 127.0.0.1",
                format!("--user-data-dir={}", driver.profile.display()),
            ],
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&driver.url)
        .await
        .expect("a WebDriver session")
}

/// The agent: counts `tools/list_changed` pushes.
#[derive(Clone)]
struct Agent {
    changed: Arc<watch::Sender<u64>>,
}

impl ClientHandler for Agent {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.send_modify(|n| *n += 1);
    }
}

struct Session {
    client: RunningService<RoleClient, Agent>,
    changed: watch::Receiver<u64>,
}

impl Session {
    async fn tools(&self) -> Vec<String> {
        self.client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect()
    }

    async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        self.client
            .call_tool(
                CallToolRequestParams::new(name.to_owned())
                    .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
            )
            .await
            .unwrap()
    }

    /// Waits for a `list_changed` push after the last one seen, then for
    /// the list to satisfy `expected` (a burst may take more than one push).
    async fn list_changes(&mut self, what: &str, expected: impl Fn(&[String]) -> bool) {
        tokio::time::timeout(PATIENCE, self.changed.changed())
            .await
            .unwrap_or_else(|_| panic!("no tools/list_changed: {what}"))
            .unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let tools = self.tools().await;
            if expected(&tools) {
                self.changed.borrow_and_update();
                return;
            }
            assert!(Instant::now() < deadline, "{what}: the tools are {tools:?}");
            let _ = tokio::time::timeout(Duration::from_millis(500), self.changed.changed()).await;
        }
    }
}

fn payload(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

/// Polls the page until `check` holds.
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + PATIENCE;
    while !check().await {
        assert!(Instant::now() < deadline, "the page never showed: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn text(page: &Client, css: &str) -> Option<String> {
    page.find(Locator::Css(css)).await.ok()?.text().await.ok()
}

async fn click(page: &Client, css: &str) {
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|err| panic!("no {css}: {err}"))
        .click()
        .await
        .unwrap_or_else(|err| panic!("cannot click {css}: {err}"));
}

async fn checked(page: &Client, css: &str) -> bool {
    match page.find(Locator::Css(css)).await {
        Ok(element) => element
            .prop("checked")
            .await
            .ok()
            .flatten()
            .is_some_and(|p| p == "true"),
        Err(_) => false,
    }
}

fn has(tools: &[String], name: &str) -> bool {
    tools.iter().any(|tool| tool == name)
}

const DISABLE: &str = "domain_devices__disable";

/// Where the journey goes: the console and a foreign page.
struct Places {
    /// The person's one-time sign-in link.
    login: String,
    /// The console's page.
    url: String,
    /// The console's port.
    port: u16,
    /// A page of another site (`http://evil.example:P/`) that tries to
    /// drive the console.
    evil: String,
}

/// Serves the foreign page: it opens the console's websocket and reports
/// whether it got in.
async fn serve_evil(console_port: u16) -> (u16, tokio::task::JoinHandle<()>) {
    let html = format!(
        r#"<!DOCTYPE html><html><body><p id="ws">trying</p><script>
const out = document.getElementById('ws');
try {{
  const ws = new WebSocket('ws://127.0.0.1:{console_port}/ws?route=/devices');
  ws.onopen = () => {{ out.textContent = 'open'; }};
  ws.onclose = () => {{ if (out.textContent !== 'open') out.textContent = 'refused'; }};
}} catch (e) {{ out.textContent = 'refused'; }}
</script></body></html>"#
    );
    let router = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let html = html.clone();
            async move { axum::response::Html(html) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (port, task)
}

/// A page of another site tries to reach the console while a request
/// waits for the person: its websocket is refused, a rebinding name gets
/// no page, and the person's dialog is untouched.
async fn attack(page: &Client, places: &Places, app: &App) {
    let person = page.window().await.unwrap();
    let evil = page.new_window(true).await.unwrap().handle;
    page.switch_to_window(evil).await.unwrap();
    page.goto(&places.evil).await.unwrap();
    until("the foreign page's websocket is refused", || async {
        text(page, "#ws").await.as_deref() == Some("refused")
    })
    .await;
    // DNS rebinding: the console's port under the foreign name.
    page.goto(&format!("http://evil.example:{}/devices", places.port))
        .await
        .unwrap();
    let body = text(page, "body").await.unwrap_or_default();
    assert!(body.contains("Forbidden"), "{body}");
    page.close_window().await.unwrap();
    page.switch_to_window(person).await.unwrap();
    assert_eq!(app.registry().confirmations().pending().len(), 1);
    let state = page
        .find(Locator::Css("#confirm-dialog"))
        .await
        .unwrap()
        .attr("data-state")
        .await
        .unwrap();
    assert_eq!(
        state.as_deref(),
        Some("live"),
        "the person's dialog is untouched"
    );
}

async fn journey(page: Client, mut agent: Session, app: App, places: Places) {
    let url = places.url.clone();
    // Not signed in: no console.
    page.goto(&url).await.unwrap();
    let body = text(&page, "body").await.unwrap_or_default();
    assert!(body.contains("sign-in link"), "{body}");
    // The person opens the one-time link the console printed.
    page.goto(&places.login).await.unwrap();
    // The page is empty until the websocket draws it: wait for elements.
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#row-d1"))
        .await
        .expect("the console draws its table");
    let tools = agent.tools().await;
    assert!(has(&tools, "view_devices__table__selectRows"), "{tools:?}");
    assert!(!has(&tools, DISABLE), "nothing selected yet: {tools:?}");

    // The person ticks rows: the agent hears it without calling anything.
    click(&page, "#select-d2").await;
    click(&page, "#select-d3").await;
    agent
        .list_changes("ticking rows offers disable", |t| has(t, DISABLE))
        .await;
    until("two rows selected", || async {
        text(&page, "#selection").await.as_deref() == Some("2 selected: d2, d3")
    })
    .await;

    // The agent asks; the dialog shows the exact bound ids; the person approves.
    let asked = agent.call(DISABLE, json!({})).await;
    assert_eq!(
        payload(&asked)["code"],
        "CONFIRMATION_REQUIRED",
        "{asked:?}"
    );
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#confirm-dialog"))
        .await
        .expect("the dialog opens");
    assert_eq!(
        text(&page, "#confirm-input").await.as_deref(),
        Some(r#"{"deviceIds":["d2","d3"]}"#)
    );
    assert_eq!(
        text(&page, "#confirm-effect").await.as_deref(),
        Some("destructive")
    );
    if let Some(path) = std::env::var_os("DEVICES_SCREENSHOT") {
        let png = page.screenshot().await.unwrap();
        std::fs::write(path, png).unwrap();
    }
    attack(&page, &places, &app).await;
    click(&page, "#approve").await;
    until("the dialog closes", || async {
        page.find(Locator::Css("#confirm-dialog")).await.is_err()
    })
    .await;
    let done = agent.call(DISABLE, json!({})).await;
    assert_ne!(done.is_error, Some(true), "{done:?}");
    assert_eq!(payload(&done)["disabled"], 2);
    until("d2 and d3 disabled", || async {
        text(&page, "#status-d2").await.as_deref() == Some("disabled")
            && text(&page, "#status-d3").await.as_deref() == Some("disabled")
    })
    .await;
    assert_eq!(app.backend().get("d2").unwrap().status, Status::Disabled);
    assert_eq!(app.backend().get("d3").unwrap().status, Status::Disabled);

    // Deny: nothing reaches the backend.
    click(&page, "#select-d2").await;
    click(&page, "#select-d3").await;
    click(&page, "#select-d4").await;
    until("d4 alone selected", || async {
        text(&page, "#selection").await.as_deref() == Some("1 selected: d4")
    })
    .await;
    let asked = agent.call(DISABLE, json!({})).await;
    assert_eq!(
        payload(&asked)["code"],
        "CONFIRMATION_REQUIRED",
        "{asked:?}"
    );
    until("the dialog asks about d4", || async {
        text(&page, "#confirm-input").await.as_deref() == Some(r#"{"deviceIds":["d4"]}"#)
    })
    .await;
    click(&page, "#deny").await;
    until("the dialog closes", || async {
        page.find(Locator::Css("#confirm-dialog")).await.is_err()
    })
    .await;
    let denied = agent.call(DISABLE, json!({})).await;
    assert_eq!(
        payload(&denied)["code"],
        "CONFIRMATION_INVALID",
        "{denied:?}"
    );
    assert_eq!(payload(&denied)["details"]["reason"], "denied");
    assert_eq!(app.backend().get("d4").unwrap().status, Status::Offline);
    assert_eq!(app.server().received().len(), 1, "one backend call in all");

    // A reload withdraws a waiting request visibly: no dialog offers it,
    // and the agent is told, then may ask anew.
    let asked = agent.call(DISABLE, json!({})).await;
    assert_eq!(
        payload(&asked)["code"],
        "CONFIRMATION_REQUIRED",
        "{asked:?}"
    );
    until("the dialog asks about d4 again", || async {
        text(&page, "#confirm-input").await.as_deref() == Some(r#"{"deviceIds":["d4"]}"#)
    })
    .await;
    agent.changed.borrow_and_update();
    page.refresh().await.unwrap();
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#row-d4"))
        .await
        .expect("the reloaded page draws the console");
    agent
        .list_changes("the reload remounts the page", |t| has(t, DISABLE))
        .await;
    assert!(app.registry().confirmations().pending().is_empty());
    assert!(
        page.find(Locator::Css("#confirm-dialog[data-state=live]"))
            .await
            .is_err(),
        "no dialog offers a request that can no longer run"
    );
    let told = agent.call(DISABLE, json!({})).await;
    assert_eq!(payload(&told)["code"], "CONFIRMATION_INVALID", "{told:?}");
    assert_eq!(payload(&told)["details"]["reason"], "withdrawn");
    assert_eq!(payload(&told)["retry"], "with-confirmation");
    let anew = agent.call(DISABLE, json!({})).await;
    assert_eq!(payload(&anew)["code"], "CONFIRMATION_REQUIRED", "{anew:?}");
    until("the reloaded page's dialog asks about d4", || async {
        text(&page, "#confirm-input").await.as_deref() == Some(r#"{"deviceIds":["d4"]}"#)
    })
    .await;
    click(&page, "#deny").await;
    until("the dialog closes", || async {
        page.find(Locator::Css("#confirm-dialog")).await.is_err()
    })
    .await;
    assert_eq!(app.server().received().len(), 1, "still one backend call");

    // Leaving the devices page removes its tools; coming back restores them.
    agent.changed.borrow_and_update();
    click(&page, "#nav-settings").await;
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#settings"))
        .await
        .expect("the settings page");
    agent
        .list_changes("leaving /devices removes its tools", |t| {
            !t.iter().any(|n| n.starts_with("view_devices__")) && !has(t, DISABLE)
        })
        .await;
    assert!(page.current_url().await.unwrap().path() == "/settings");
    click(&page, "#nav-devices").await;
    agent
        .list_changes("coming back restores them", |t| {
            has(t, "view_devices__table__selectRows") && has(t, "view_devices__filters__set")
        })
        .await;

    // What the agent does shows in the page, without a reload.
    let filtered = agent
        .call(
            "view_devices__filters__set",
            json!({"status": "offline", "city": "Milan"}),
        )
        .await;
    assert_ne!(filtered.is_error, Some(true), "{filtered:?}");
    until("only offline devices in Milan", || async {
        page.find(Locator::Css("#row-d5")).await.is_err()
            && page.find(Locator::Css("#row-d4")).await.is_ok()
    })
    .await;
    let selected = agent
        .call("view_devices__table__selectRows", json!({"ids": ["d4"]}))
        .await;
    assert_ne!(selected.is_error, Some(true), "{selected:?}");
    until("the agent's selection is ticked", || async {
        checked(&page, "#select-d4").await
            && text(&page, "#selection").await.as_deref() == Some("1 selected: d4")
    })
    .await;

    // The scripted agent, run from the page, waits for the person's answer.
    click(&page, "#run-agent").await;
    until("the scripted agent asks about d4", || async {
        text(&page, "#confirm-input").await.as_deref() == Some(r#"{"deviceIds":["d4"]}"#)
    })
    .await;
    assert_eq!(app.backend().get("d4").unwrap().status, Status::Offline);
    click(&page, "#approve").await;
    until("the scripted agent is done", || async {
        text(&page, "#transcript")
            .await
            .is_some_and(|t| t.contains("Done: 1 devices disabled."))
    })
    .await;
    assert_eq!(app.backend().get("d4").unwrap().status, Status::Disabled);
    until("d4 shows disabled", || async {
        text(&page, "#status-d4").await.as_deref() == Some("disabled")
    })
    .await;

    // One surface per application: a second tab takes the console over,
    // the first says so; closing the second and taking it back restores
    // the tools.
    let first = page.window().await.unwrap();
    let second = page.new_window(true).await.unwrap().handle;
    page.switch_to_window(second).await.unwrap();
    page.goto(&url).await.unwrap();
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#row-d4"))
        .await
        .expect("the second tab draws the console (filtered by the agent)");
    assert!(has(&agent.tools().await, "view_devices__table__selectRows"));
    agent.changed.borrow_and_update();
    page.close_window().await.unwrap();
    page.switch_to_window(first).await.unwrap();
    agent
        .list_changes("closing the tab in front removes its tools", |t| {
            !has(t, "view_devices__table__selectRows")
        })
        .await;
    click(&page, "#take-over").await;
    agent
        .list_changes("taking the console back restores them", |t| {
            has(t, "view_devices__table__selectRows")
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_adapter_003_the_person_in_the_browser_and_the_agent_over_mcp_share_the_console() {
    let (chromium, driver) = match browser() {
        Ok(found) => found,
        Err(why) if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("{why}: CI must run the browser test (apt-get install chromium chromium-driver)")
        }
        Err(why) => {
            eprintln!("skipped: {why} (apt-get install chromium chromium-driver to run it)");
            return;
        }
    };
    let user = User::admin();
    let app = App::connect(web::registry(&user), user).await.unwrap();
    let server = McpServer::builder(app.registry()).name("devices").build();
    let address: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let console = web::serve(app.clone(), &server, address).await.unwrap();
    let port = console.local_addr().port();
    let (evil_port, evil) = serve_evil(port).await;
    let places = Places {
        login: console.login_url(),
        url: console.url(),
        port,
        evil: format!("http://evil.example:{evil_port}/"),
    };

    let changed = Arc::new(watch::channel(0).0);
    let receiver = changed.subscribe();
    let client = Agent { changed }
        .serve(StreamableHttpClientTransport::from_uri(console.mcp_url()))
        .await
        .expect("the MCP handshake over HTTP");
    let agent = Session {
        client,
        changed: receiver,
    };

    let driver = start_driver(&driver).await;
    let page = open_browser(&driver, &chromium).await;
    // The steps run in their own task so the browser is closed even when
    // one of them fails.
    let steps = tokio::spawn(journey(page.clone(), agent, app.clone(), places));
    let outcome = tokio::time::timeout(Duration::from_secs(120), steps).await;
    let _ = page.close().await;
    drop(driver);
    evil.abort();
    console.shutdown().await;
    app.stop().await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(failed)) => std::panic::resume_unwind(failed.into_panic()),
        Err(_) => panic!("the browser journey took over two minutes"),
    }
}
