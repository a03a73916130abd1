//! The browser harness: headless Chromium through WebDriver as the person,
//! an rmcp client over streamable HTTP as the agent, one fresh console per
//! test, and a foreign page for the attack steps.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

pub mod model_context;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_surface::mcp::McpServer;
use devices::{App, User, web};
use fantoccini::{Client, ClientBuilder, Locator};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

/// How long any one expected change may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// A program on `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Chromium and its driver, or why the test cannot run.
pub fn browser() -> Result<(PathBuf, PathBuf), String> {
    let chromium = on_path("chromium").ok_or("chromium is not installed")?;
    let driver = on_path("chromedriver").ok_or("chromedriver is not installed")?;
    Ok((chromium, driver))
}

/// chromedriver in its own process group, killed with its browsers on drop.
pub struct Driver {
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

pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

pub async fn start_driver(driver: &Path) -> Driver {
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

pub async fn open_browser(driver: &Driver, chromium: &Path, extra: &[&str]) -> Client {
    let mut args = vec![
        "--headless=new".to_owned(),
        "--no-sandbox".to_owned(),
        "--disable-gpu".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--window-size=1280,860".to_owned(),
        // A foreign site on this machine, for the attack steps.
        "--host-resolver-rules=MAP evil.example 127.0.0.1".to_owned(),
        format!("--user-data-dir={}", driver.profile.display()),
    ];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("chrome"));
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": args,
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
pub struct Agent {
    pub changed: Arc<watch::Sender<u64>>,
}

impl ClientHandler for Agent {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.send_modify(|n| *n += 1);
    }
}

pub struct Session {
    pub client: RunningService<RoleClient, Agent>,
    pub changed: watch::Receiver<u64>,
}

impl Session {
    pub async fn tools(&self) -> Vec<String> {
        self.client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect()
    }

    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        self.client
            .call_tool(
                CallToolRequestParams::new(name.to_owned())
                    .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
            )
            .await
            .unwrap()
    }

    /// Waits for the list to satisfy `expected`, pushed or not: a change
    /// that undoes itself before the server compares (the same tools
    /// unmounted by one tab and mounted again by another) sends no
    /// `list_changed`, and needs none.
    pub async fn list_holds(&mut self, what: &str, expected: impl Fn(&[String]) -> bool) {
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

    /// Waits for a `list_changed` push after the last one seen, then for
    /// the list to satisfy `expected` (a burst may take more than one push).
    pub async fn list_changes(&mut self, what: &str, expected: impl Fn(&[String]) -> bool) {
        tokio::time::timeout(PATIENCE, self.changed.changed())
            .await
            .unwrap_or_else(|_| panic!("no tools/list_changed: {what}"))
            .unwrap();
        self.list_holds(what, expected).await;
    }
}

pub fn payload(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

/// Polls the page until `check` holds.
pub async fn until<F, Fut>(what: &str, mut check: F)
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

/// The text of the first element matching `css` (its `textContent`,
/// trimmed: also what a collapsed disclosure holds).
pub async fn text(page: &Client, css: &str) -> Option<String> {
    let element = page.find(Locator::Css(css)).await.ok()?;
    let content = element.prop("textContent").await.ok()??;
    Some(content.trim().to_owned())
}

pub async fn click(page: &Client, css: &str) {
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|err| panic!("no {css}: {err}"))
        .click()
        .await
        .unwrap_or_else(|err| panic!("cannot click {css}: {err}"));
}

pub async fn checked(page: &Client, css: &str) -> bool {
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

pub fn has(tools: &[String], name: &str) -> bool {
    tools.iter().any(|tool| tool == name)
}

/// Where the journey goes: the console and a foreign page.
pub struct Places {
    /// The person's one-time sign-in link.
    pub login: String,
    /// The console's page.
    pub url: String,
    /// The console's port.
    pub port: u16,
    /// A page of another site (`http://evil.example:P/`) that tries to
    /// drive the console.
    pub evil: String,
    /// Every later one-time sign-in link, as the terminal prints them.
    pub logins: watch::Receiver<String>,
}

/// Serves the foreign page: it opens the console's websocket and reports
/// whether it got in.
pub async fn serve_evil(console_port: u16) -> (u16, tokio::task::JoinHandle<()>) {
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

/// Serializes the browser tests of one binary: one Chromium at a time on
/// a small machine.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs `steps` with a fresh console (its registry as the web console
/// builds it), an MCP agent connected over HTTP and headless Chromium
/// (signed out), then closes everything, even when a step fails. Skipped
/// without Chromium, unless `CI=true`.
pub async fn in_browser<F, Fut>(steps: F)
where
    F: FnOnce(Client, Session, App, Places) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    in_browser_with(&[], steps).await;
}

/// [`in_browser`], Chromium started with `extra` arguments as well.
pub async fn in_browser_with<F, Fut>(extra: &[&str], steps: F)
where
    F: FnOnce(Client, Session, App, Places) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some((chromium, driver)) = browser_or_skip() else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let user = User::admin();
    let approvals = web::Approvals::new().unwrap();
    let app = App::connect(web::registry(&user, &approvals), user)
        .await
        .unwrap();
    let server = McpServer::builder(app.registry())
        .name("devices")
        .approval_page(approvals.pages().hook())
        .build();
    let address: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let console = web::serve(app.clone(), &approvals, &server, address)
        .await
        .unwrap();
    // What the person reads in the terminal: every code this console prints.
    let mut printed = approvals.presence().terminal();
    let printing = tokio::spawn(async move {
        while let Ok(code) = printed.recv().await {
            PRINTED
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(code);
        }
    });
    *TERMINAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((approvals, app.clone()));
    let port = console.local_addr().port();
    let (evil_port, evil) = serve_evil(port).await;
    let places = Places {
        login: console.login_url(),
        url: console.url(),
        port,
        evil: format!("http://evil.example:{evil_port}/"),
        logins: console.login_urls(),
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
    let page = open_browser(&driver, &chromium, extra).await;
    // The steps run in their own task so the browser is closed even when
    // one of them fails.
    let run = tokio::spawn(steps(page.clone(), agent, app.clone(), places));
    let outcome = tokio::time::timeout(Duration::from_secs(120), run).await;
    let _ = page.close().await;
    drop(driver);
    evil.abort();
    printing.abort();
    PRINTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clear();
    console.shutdown().await;
    app.stop().await;
    journey_ended(outcome);
}

/// Chromium and chromedriver, or `None` (said) where they are not
/// installed; with `CI=true` their absence fails the test.
pub fn browser_or_skip() -> Option<(PathBuf, PathBuf)> {
    match browser() {
        Ok(found) => Some(found),
        Err(why) if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("{why}: CI must run the browser test (apt-get install chromium chromium-driver)")
        }
        Err(why) => {
            eprintln!("skipped: {why} (apt-get install chromium chromium-driver to run it)");
            None
        }
    }
}

/// How a journey run in its own task (so the browser is closed whatever
/// happens) ended: its panic, or the two minutes it may take, fails the
/// test.
pub fn journey_ended(
    outcome: Result<Result<(), tokio::task::JoinError>, tokio::time::error::Elapsed>,
) {
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(failed)) => std::panic::resume_unwind(failed.into_panic()),
        Err(_) => panic!("the browser journey took over two minutes"),
    }
}

/// Signs the person in with the one-time link and waits for the console.
pub async fn sign_in(page: &Client, places: &Places) {
    page.goto(&places.login).await.unwrap();
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#row-d1"))
        .await
        .expect("the console draws its table");
}

/// The running console's proofs and app, for the code its terminal shows.
static TERMINAL: std::sync::Mutex<Option<(web::Approvals, App)>> = std::sync::Mutex::new(None);

/// The codes the running console printed in its terminal, oldest first.
static PRINTED: std::sync::Mutex<Vec<web::ApprovalCode>> = std::sync::Mutex::new(Vec::new());

/// Sets up a passkey as the person does, from the setup shown in `place`
/// (`offer` or `dialog`): the setup code the terminal printed, typed in,
/// then the browser's passkey prompt (a virtual authenticator answers).
pub async fn set_up_passkey(page: &Client, place: &str) {
    let setups = || {
        PRINTED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|c| c.title.starts_with("Set up a passkey"))
            .map(|c| c.code.clone())
            .collect::<Vec<_>>()
    };
    let before = setups().len();
    click(page, &format!("#{place}-setup-passkey")).await;
    let mut code = None;
    until("the terminal prints a new setup code", || {
        let printed = setups();
        let found = printed.get(before).cloned();
        code = found.clone();
        async move { found.is_some() }
    })
    .await;
    let field = page
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(&format!("#{place}-setup-code")))
        .await
        .expect("the setup code field");
    field.send_keys(&code.unwrap_or_default()).await.unwrap();
    // The button wakes once the page has all eight digits.
    let ready = format!("#{place}-setup-continue:not([disabled])");
    until("the setup takes the code", || async {
        page.find(Locator::Css(&ready)).await.is_ok()
    })
    .await;
    click(page, &format!("#{place}-setup-continue")).await;
    // Set up, the setup step leaves (a refusal keeps it, saying why).
    until("the passkey is set up", || async {
        page.find(Locator::Css(&format!("#{place}-setup-step")))
            .await
            .is_err()
    })
    .await;
}

/// The one-time code the console's terminal shows for the request the
/// dialog presents, as the person reads it there.
pub async fn terminal_code(page: &Client) -> String {
    let dialog = page
        .find(Locator::Css("#confirm-dialog"))
        .await
        .expect("a dialog");
    let id = dialog
        .attr("data-confirmation")
        .await
        .unwrap()
        .expect("the dialog names its request");
    let terminal = TERMINAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let (approvals, app) = terminal.expect("a console is running");
    let request = app
        .registry()
        .confirmations()
        .find(&id)
        .expect("the request is pending");
    approvals.code_for(&request.presence_challenge())
}

/// Answers the dialog as a person does: once its buttons take answers
/// (a new request ignores clicks for a moment), clicks `button`. A request
/// that needs proof of presence is approved as a person without a passkey
/// does: the code from the terminal typed into the dialog.
pub async fn answer(page: &Client, button: &str) {
    until("the dialog takes answers", || async {
        page.find(Locator::Css("#confirm-dialog #deny[aria-disabled=false]"))
            .await
            .is_ok()
    })
    .await;
    let proving = page
        .find(Locator::Css("#confirm-dialog #presence"))
        .await
        .is_ok();
    if button == "#approve" && proving {
        let code = terminal_code(page).await;
        page.execute(
            "var f = document.getElementById('presence-code'); f.value = ''; \
             f.dispatchEvent(new Event('input', {bubbles: true}));",
            vec![],
        )
        .await
        .unwrap();
        let field = page
            .find(Locator::Css("#presence-code"))
            .await
            .expect("the code field");
        field.send_keys(&code).await.unwrap();
        until("the code button takes answers", || async {
            page.find(Locator::Css("#approve-code:not([disabled])"))
                .await
                .is_ok()
        })
        .await;
        click(page, "#approve-code").await;
        return;
    }
    click(page, button).await;
}

/// The disable tool's name.
pub const DISABLE: &str = "domain_devices__disable";

/// The agent selects `ids` and asks to disable them: the dialog opens.
pub async fn agent_asks(page: &Client, agent: &Session, ids: &[&str]) -> Value {
    let selected = agent
        .call("view_devices__table__selectRows", json!({"ids": ids}))
        .await;
    assert_ne!(selected.is_error, Some(true), "{selected:?}");
    let mut asked = agent.call(DISABLE, json!({})).await;
    if payload(&asked)["retry"] == "after-refresh" {
        // The selection moved the surface: look again, as an agent should.
        agent.tools().await;
        asked = agent.call(DISABLE, json!({})).await;
    }
    assert_eq!(
        payload(&asked)["code"],
        "CONFIRMATION_REQUIRED",
        "{asked:?}"
    );
    answer_ready(page).await;
    payload(&asked)
}

/// Waits until a live dialog takes answers.
pub async fn answer_ready(page: &Client) {
    until("the dialog is live and takes answers", || async {
        page.find(Locator::Css(
            "#confirm-dialog[data-state=live] #deny[aria-disabled=false]",
        ))
        .await
        .is_ok()
    })
    .await;
}

/// One command of WebDriver's WebAuthn extension.
#[derive(Debug)]
struct WebAuthn {
    method: http::Method,
    path: String,
    body: Option<Value>,
}

impl fantoccini::wd::WebDriverCompatibleCommand for WebAuthn {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/webauthn/{}",
            session_id.unwrap_or_default(),
            self.path
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            self.method.clone(),
            self.body.as_ref().map(ToString::to_string),
        )
    }
}

/// Adds a platform authenticator that verifies the person (`verified`);
/// returns its id.
pub async fn add_authenticator(page: &Client, verified: bool) -> String {
    let answer = page
        .issue_cmd(WebAuthn {
            method: http::Method::POST,
            path: "authenticator".into(),
            body: Some(json!({
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": true,
                "hasUserVerification": true,
                "isUserConsenting": true,
                "isUserVerified": verified,
            })),
        })
        .await
        .expect("the virtual authenticator");
    answer.as_str().expect("an authenticator id").to_owned()
}

/// Whether authenticator `id` verifies the person from now on.
pub async fn verifies(page: &Client, id: &str, verified: bool) {
    page.issue_cmd(WebAuthn {
        method: http::Method::POST,
        path: format!("authenticator/{id}/uv"),
        body: Some(json!({"isUserVerified": verified})),
    })
    .await
    .expect("set user verification");
}

pub async fn remove_authenticator(page: &Client, id: &str) {
    page.issue_cmd(WebAuthn {
        method: http::Method::DELETE,
        path: format!("authenticator/{id}"),
        body: None,
    })
    .await
    .expect("remove the authenticator");
}

/// The credentials authenticator `id` holds (with their private keys), as
/// WebDriver's WebAuthn extension gives them.
pub async fn credentials(page: &Client, id: &str) -> Vec<Value> {
    let answer = page
        .issue_cmd(WebAuthn {
            method: http::Method::GET,
            path: format!("authenticator/{id}/credentials"),
            body: None,
        })
        .await
        .expect("the authenticator's credentials");
    answer.as_array().cloned().unwrap_or_default()
}

/// Adds `credential` (from [`credentials`]) to authenticator `id`.
pub async fn add_credential(page: &Client, id: &str, credential: Value) {
    page.issue_cmd(WebAuthn {
        method: http::Method::POST,
        path: format!("authenticator/{id}/credential"),
        body: Some(credential),
    })
    .await
    .expect("add the credential");
}

/// What a script in the page can do, as an attacker's would: fill the field
/// `field` with `value` (with the input event a person's typing makes) and,
/// a moment later, click `button` (enabled first). `gone` when either is
/// missing, `sent` otherwise.
pub async fn script_fills_and_clicks(
    page: &Client,
    field: &str,
    value: &str,
    button: &str,
) -> String {
    page.execute(
        "var f = document.getElementById(arguments[0]); \
         var b = document.getElementById(arguments[2]); \
         if (!f || !b) { return 'gone'; } \
         f.value = arguments[1]; f.dispatchEvent(new Event('input', {bubbles: true})); \
         setTimeout(function () { b.disabled = false; b.click(); }, 200); return 'sent';",
        vec![json!(field), json!(value), json!(button)],
    )
    .await
    .unwrap()
    .as_str()
    .unwrap_or_default()
    .to_owned()
}
