//! The devices app served over HTTP for the raw MCP client, which is the
//! runtime's own (`runtime/tests/support/raw_mcp.rs`, included by path):
//! `--mcp http`, or the web console with `/mcp` beside its pages.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)] // test code

#[path = "../../../../runtime/tests/support/raw_mcp.rs"]
mod raw_mcp;

use agent_surface::mcp::{HttpServer, McpServer, McpServerBuilder};
use devices::web::WebConsole;
use devices::{App, User};

pub use raw_mcp::*;

/// The devices binary of this package.
pub const BINARY: &str = env!("CARGO_BIN_EXE_devices");

/// A devices process serving MCP over HTTP; killed on drop.
pub struct Running {
    pub child: std::process::Child,
    /// Its endpoint, as it printed it (`http://ADDR/mcp`).
    pub url: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the devices binary with `args` and reads the endpoint from its
/// first line (`listening on URL`).
pub fn spawn(args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>) -> Running {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(BINARY)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    Running { child, url }
}

/// The devices app served over HTTP on a loopback port: `--mcp http`
/// (`http`), or the web console with `/mcp` beside its pages (`console`).
pub struct Served {
    pub app: App,
    pub server: McpServer,
    pub http: Option<HttpServer>,
    pub console: Option<WebConsole>,
    /// The console's passkeys, terminal codes and approval pages (a
    /// console only).
    pub approvals: Option<devices::web::Approvals>,
    pub raw: RawMcp,
}

impl std::ops::Deref for Served {
    type Target = RawMcp;

    fn deref(&self) -> &RawMcp {
        &self.raw
    }
}

impl Served {
    /// Where it listens.
    pub fn address(&self) -> std::net::SocketAddr {
        match (&self.http, &self.console) {
            (Some(http), _) => http.local_addr(),
            (None, Some(console)) => console.local_addr(),
            (None, None) => unreachable!("served one way or the other"),
        }
    }
}

/// The web console of a fresh devices app for the admin, its page mounted
/// (as a signed-in tab would), `/mcp` beside it, the builder adjusted by
/// `tune`.
pub async fn serve_console(tune: impl FnOnce(McpServerBuilder) -> McpServerBuilder) -> Served {
    let user = User::admin();
    let approvals = devices::web::Approvals::new().unwrap();
    let app = App::attach(devices::web::registry(&user, &approvals), user)
        .await
        .unwrap();
    let server = tune(
        McpServer::builder(app.registry())
            .name("devices")
            .approval_page(approvals.pages().hook()),
    )
    .build();
    let console = devices::web::serve(
        app.clone(),
        &approvals,
        &server,
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let url = console.mcp_url();
    Served {
        app,
        server,
        http: None,
        console: Some(console),
        approvals: Some(approvals),
        raw: RawMcp::new(url),
    }
}

/// Serves a fresh devices app for `user`, the builder adjusted by `tune`.
pub async fn serve_as(
    user: User,
    tune: impl FnOnce(McpServerBuilder) -> McpServerBuilder,
) -> Served {
    let app = App::start(user).await.unwrap();
    let server = tune(McpServer::builder(app.registry()).name("devices")).build();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = http.url();
    Served {
        app,
        server,
        http: Some(http),
        console: None,
        approvals: None,
        raw: RawMcp::new(url),
    }
}

/// [`serve_as`] the admin.
pub async fn serve(tune: impl FnOnce(McpServerBuilder) -> McpServerBuilder) -> Served {
    serve_as(User::admin(), tune).await
}
