//! The web console: the devices console as a live web application. Dioxus
//! LiveView on axum renders it from this process (component logic native,
//! no wasm; the page is a thin client over a websocket), and the same
//! process serves the agent surface over MCP streamable HTTP at `/mcp`.
//!
//! **One surface per application.** The console's state, its registry and
//! its MCP endpoint belong to the running application: every tab shows the
//! same console, and the agent connected at `/mcp` sees what the person
//! does in the page. The components that mount the capabilities are those
//! of the tab in front. A newly opened tab is in front only when no other
//! tab is open (a reload included: the reloaded tab closes first, or the
//! new one moves to the front as soon as it does); otherwise it says the
//! console is open in another tab and offers to take it over, so opening a
//! tab — or a page opening one — never withdraws the requests waiting in
//! the tab in front. Taking over replaces that tab's mounts (the registry
//! is built with [`DuplicatePolicy::Replace`]); when the tab in front
//! closes, the newest open tab moves to the front.
//!
//! **Who may approve.** Only the person, in a signed-in tab: every route
//! (pages, the websocket, `/mcp`) passes one `Origin`/`Host` gate, pages
//! need the person's cookie and the websocket also the socket key that only
//! the console's own origin can read (see `login`), and the dialog answers
//! through the registry's in-app channel `console`. The MCP endpoint has no
//! way to approve: elicitation is off beside the dialog.

mod activity;
mod agent_panel;
mod approval_page;
mod approval_pages;
mod approvals;
mod clock;
mod dialog;
mod login;
mod passkey_offer;
mod presence;
mod proof_words;
mod prove;
mod request_view;
mod routes;
mod views;
mod watch;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_surface::confirmation::Approver;
use agent_surface::mcp::{HttpServer, McpServer};
use agent_surface::registry::{DuplicatePolicy, Registry, RegistryBuilder};

pub use approval_pages::ApprovalPages;
pub use approvals::Approvals;
use login::Login;
pub use presence::{ApprovalCode, Presence};

use crate::app::{App, registry_for};
use crate::components::Route;
use crate::server::User;

/// The approval channel of the console's dialog.
pub const CONSOLE_CHANNEL: &str = "console";

/// The registry of a web console for `user`: the console's configuration
/// with the newest tab's mounts replacing an older tab's, the dialog as its
/// in-app approval channel ([`CONSOLE_CHANNEL`]), and proof of presence
/// (`presence`: a passkey or the terminal's one-time code) required for
/// every destructive or irreversible request.
pub fn registry(user: &User, approvals: &Approvals) -> Registry {
    registry_with(user, approvals, |builder| builder)
}

/// [`registry`], its builder further adjusted by `configure` (the binary
/// pins it with [`crate::pinned`]).
pub fn registry_with(
    user: &User,
    approvals: &Approvals,
    configure: impl FnOnce(RegistryBuilder) -> RegistryBuilder,
) -> Registry {
    registry_for(user, |builder| {
        configure(
            builder
                .duplicate_instances(DuplicatePolicy::Replace)
                .approval_channel(CONSOLE_CHANNEL)
                .require_presence(Presence::rule(), approvals.presence().clone()),
        )
    })
}

/// Which tab drives the console, and which are open.
#[derive(Debug, Default)]
pub(crate) struct Tabs {
    next: AtomicU64,
    open: std::sync::Mutex<Vec<u64>>,
    active: tokio::sync::watch::Sender<u64>,
}

impl Tabs {
    fn open_tabs(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new tab: in front only when no other tab is open.
    pub(crate) fn open(&self) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut open = self.open_tabs();
        if open.is_empty() {
            self.active.send_replace(id);
        }
        open.push(id);
        id
    }

    /// Tab `id` closed: if it was in front, the newest open tab moves there.
    pub(crate) fn close(&self, id: u64) {
        let mut open = self.open_tabs();
        open.retain(|tab| *tab != id);
        if *self.active.borrow() == id {
            self.active.send_replace(open.last().copied().unwrap_or(0));
        }
    }

    /// Makes tab `id` the one in front.
    pub(crate) fn take_over(&self, id: u64) {
        self.active.send_replace(id);
    }
}

/// What every tab's `VirtualDom` receives as root context.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) app: App,
    pub(crate) tabs: Arc<Tabs>,
    pub(crate) mcp_url: String,
    /// The MCP server beside the page (who is connected).
    pub(crate) mcp: McpServer,
    /// The person answering in the dialog (`None`: the registry declares
    /// no console channel, and the dialog cannot answer).
    pub(crate) approver: Option<Approver>,
    /// The passkeys and codes that prove the person approves.
    pub(crate) presence: Presence,
    /// The approval pages of remote agents' requests.
    pub(crate) pages: ApprovalPages,
    /// The person's record of what agents did, beyond any tab.
    pub(crate) activity: agent_surface_dioxus::ActivityLog,
}

/// This tab's number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TabId(pub(crate) u64);

/// What ends this tab's signed-in session (sign-out, eviction by newer
/// sign-ins): an answer is refused once it fired.
#[derive(Clone, Debug)]
pub(crate) struct SessionEnd(pub(crate) tokio_util::sync::CancellationToken);

impl SessionEnd {
    /// Whether the session is still signed in.
    pub(crate) fn live(&self) -> bool {
        !self.0.is_cancelled()
    }
}

/// The route a tab opens on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenedOn(pub(crate) Option<Route>);

/// A running web console.
#[derive(Debug)]
pub struct WebConsole {
    http: HttpServer,
    login: Arc<Login>,
    presence: Presence,
    _announcing: agent_surface::confirmation::PendingSubscription,
}

impl WebConsole {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.http.local_addr()
    }

    /// The console's origin for a person: `http://localhost:PORT`.
    /// Passkeys need a domain, and browsers refuse `127.0.0.1` as one; the
    /// console listens on loopback, so `localhost` reaches it.
    pub fn origin(&self) -> String {
        format!("http://localhost:{}", self.local_addr().port())
    }

    /// The page's URL (`http://localhost:PORT/devices`): it asks for the
    /// sign-in link unless the browser is signed in.
    pub fn url(&self) -> String {
        format!("{}/devices", self.origin())
    }

    /// The current one-time sign-in URL (`http://localhost:PORT/login?token=…`):
    /// opening it signs a browser in; then a new one is issued.
    pub fn login_url(&self) -> String {
        let token = self.login.tokens().borrow().clone();
        format!("{}/login?token={token}", self.origin())
    }

    /// The one-time codes of requests that need proof of presence, as they
    /// arrive: print each where only the person reads it.
    pub fn approval_codes(&self) -> tokio::sync::broadcast::Receiver<ApprovalCode> {
        self.presence.terminal()
    }

    /// Every sign-in URL from now on: the current one first, then a new one
    /// each time one is used.
    pub fn login_urls(&self) -> tokio::sync::watch::Receiver<String> {
        self.login.tokens()
    }

    /// The MCP endpoint's URL (`http://localhost:PORT/mcp`).
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.origin())
    }

    /// Stops serving and waits for the server task.
    pub async fn shutdown(self) {
        self.http.shutdown().await;
    }
}

/// Serves the console for `app` at `address` (use a loopback address): the
/// sign-in at `/login`, the page at `/devices` and `/settings`, its
/// websocket at `/ws`, and `mcp`'s streamable HTTP at `/mcp` — one listener
/// with `mcp`'s defences on every route (the `Origin`/`Host` gate, the
/// connection limit, read timeouts, the body limit). Pages need the
/// person's page cookie; the websocket needs it, the socket key only the
/// console's own origin can read, and that origin (see `login`).
pub async fn serve(
    app: App,
    approvals: &Approvals,
    mcp: &McpServer,
    address: SocketAddr,
) -> Result<WebConsole, std::io::Error> {
    serve_with_record(app, approvals, mcp, address, None).await
}

/// [`serve`], the person's activity beginning with what `record` (the
/// registry's durable audit log, if it has one) kept from before this
/// process started: a restarted console shows yesterday's calls and
/// approvals. Give the registry the same log as its audit sink
/// ([`RegistryBuilder::audit_sink`]) so today's are kept too.
pub async fn serve_with_record(
    app: App,
    approvals: &Approvals,
    mcp: &McpServer,
    address: SocketAddr,
    record: Option<&agent_surface::audit::AuditLog>,
) -> Result<WebConsole, std::io::Error> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    let presence = approvals.presence();
    presence
        .serve_on(bound.port())
        .map_err(std::io::Error::other)?;
    approvals.pages().serve_at(
        format!("http://localhost:{}", bound.port()),
        app.registry().confirmations(),
    );
    let announcing = announce_codes(&app, presence);
    let login = Arc::new(Login::new(bound.port()).ok_or_else(|| {
        std::io::Error::other("no system randomness for the console's sign-in secret")
    })?);
    let approver = app
        .registry()
        .confirmations()
        .approver(CONSOLE_CHANNEL, &app.user().id)
        .ok();
    // What the record kept from before; a record that cannot be read
    // starts the list empty (it is still written to), and says so.
    let query = agent_surface::audit::AuditQuery::new().limit(activity::KEPT * 8);
    let history = match record.map(|record| record.read(&query)) {
        Some(Ok(kept)) => agent_surface_dioxus::activity_from_audit(&kept.records, activity::KEPT),
        Some(Err(err)) => {
            tracing::warn!(%err, "the audit record cannot be read; the activity list starts empty");
            Vec::new()
        }
        None => Vec::new(),
    };
    let activity = agent_surface_dioxus::ActivityLog::start_with_history(
        app.registry(),
        activity::KEPT,
        history,
    );
    let shared = Shared {
        app,
        tabs: Arc::new(Tabs::default()),
        mcp_url: format!("http://localhost:{}/mcp", bound.port()),
        mcp: mcp.clone(),
        approver,
        presence: presence.clone(),
        pages: approvals.pages().clone(),
        activity,
    };
    let routes = routes::router(shared, Arc::clone(&login))?;
    let http = mcp
        .serve_on(listener, routes)
        .map_err(std::io::Error::other)?;
    Ok(WebConsole {
        http,
        login,
        presence: presence.clone(),
        _announcing: announcing,
    })
}

/// Issues a code for each new request that needs proof of presence and
/// shows it in the terminal, with what the request applies to; the codes of
/// requests no longer pending are forgotten.
fn announce_codes(
    app: &App,
    presence: &Presence,
) -> agent_surface::confirmation::PendingSubscription {
    let presence = presence.clone();
    let announced = std::sync::Mutex::new(Vec::<Arc<str>>::new());
    app.registry().confirmations().subscribe(move |pending| {
        let mut announced = announced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let waiting: Vec<Arc<str>> = pending
            .iter()
            .filter(|p| p.presence_required)
            .map(|p| Arc::clone(&p.confirmation_id))
            .collect();
        presence.retain_pending(&waiting);
        for request in pending.iter().filter(|p| p.presence_required) {
            if announced.contains(&request.confirmation_id) {
                continue;
            }
            let code = presence.code_for(&request.presence_challenge());
            presence.announce(ApprovalCode {
                title: request.presentation.title.clone(),
                items: request.presentation.items.clone(),
                confirmation_id: request.confirmation_id.to_string(),
                code,
            });
        }
        // Only what is pending is remembered (at most the pending limit).
        *announced = waiting;
    })
}
