//! The whole application: the backend and its MCP face, the console, the
//! registry the agent sees, and the router that mounts pages.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use agent_surface::ErrorPayload;
use agent_surface::confirmation::{Presentation, PresentationRequest};
use agent_surface::context::HostContext;
use agent_surface::procedure::mcp::McpExecutor;
use agent_surface::registry::{MountError, Mounted, Registry, RegistryBuilder};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

use crate::backend::Backend;
use crate::components::{Console, DevicesTable, Drawer, FilterBar, Navigation, Route};
use crate::domain::disable_reference;
use crate::server::{BackendServer, User};

/// Why the application could not start.
#[derive(Debug)]
pub enum StartError {
    /// The MCP session with the backend failed.
    Backend(String),
    /// A component or reference could not be mounted.
    Mount(MountError),
    /// The backend's manifest disagrees with the declared procedures.
    Manifest(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Backend(message) => write!(f, "the backend session failed: {message}"),
            StartError::Mount(err) => write!(f, "mounting failed: {err}"),
            StartError::Manifest(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for StartError {}

impl From<MountError> for StartError {
    fn from(err: MountError) -> Self {
        StartError::Mount(err)
    }
}

struct Inner {
    registry: Registry,
    console: Arc<Console>,
    backend: Arc<Backend>,
    user: User,
    server: BackendServer,
    session: Mutex<Option<RunningService<RoleClient, ()>>>,
    page: Mutex<Vec<Mounted>>,
    navigation: Mutex<Option<Mounted>>,
}

/// The devices console, running for one signed-in user.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

impl fmt::Debug for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("user", &self.inner.user)
            .finish_non_exhaustive()
    }
}

/// Mounts the devices page: the filter bar, the table (with its reference
/// to `domain:devices.disable`) and the drawer.
pub fn mount_page(registry: &Registry, console: &Arc<Console>) -> Result<Vec<Mounted>, MountError> {
    Ok(vec![
        registry.mount(Arc::new(FilterBar(Arc::clone(console))))?,
        registry
            .mounting(Arc::new(DevicesTable(Arc::clone(console))))
            .procedure(disable_reference(console))
            .mount()?,
        registry.mount(Arc::new(Drawer(Arc::clone(console))))?,
    ])
}

/// The registry configuration of the console: backend `forbidden` errors
/// are the server refusing the user, and confirmations are presented in
/// the person's terms (see [`present`]).
pub fn registry_builder() -> RegistryBuilder {
    // The demo fleet's names never change (only statuses do), so the
    // presenter reads them from the fleet the backend starts with.
    let names: std::collections::HashMap<String, String> = Backend::demo()
        .query(None, None)
        .into_iter()
        .map(|device| (device.id, device.name))
        .collect();
    Registry::builder()
        .procedure_errors(|_, error| match error.code() {
            Some("forbidden") => Some(ErrorPayload::not_authorized(
                agent_surface::error::Origin::Server,
            )),
            _ => None,
        })
        .confirmation_presenter(move |request| present(request, &names))
}

/// A confirmation in the person's terms: "Disable 3 devices: Gateway
/// Milano Centrale, …" on a red "Disable 3 devices" button. Device names,
/// never ids (an id the fleet does not know is shown as "unknown device
/// d99"); other capabilities keep the default presentation.
pub fn present(
    request: &PresentationRequest<'_>,
    names: &std::collections::HashMap<String, String>,
) -> Option<Presentation> {
    if request.capability_id != "domain:devices.disable" {
        return None;
    }
    let ids: Vec<&str> = request
        .input
        .get("deviceIds")?
        .as_array()?
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let named: Vec<String> = ids
        .iter()
        .map(|id| match names.get(*id) {
            Some(name) => name.clone(),
            None => format!("unknown device {id}"),
        })
        .collect();
    let count = match named.len() {
        1 => "1 device".to_owned(),
        n => format!("{n} devices"),
    };
    let list = match named.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    Some(Presentation::new(
        format!("Disable {count}: {list}"),
        format!("Disable {count}"),
        "Disabled devices stop reporting and cannot be used until someone enables them again.",
    ))
}

/// The host context of a signed-in user, as the console's policies read it.
pub fn host_for(user: &User) -> HostContext {
    HostContext::new().with(
        "user",
        json!({"id": user.id, "permissions": user.permissions}),
    )
}

impl App {
    /// Starts the application for `user`: the demo backend, an MCP session
    /// with it in the user's name, the registry (host context = the user,
    /// backend `forbidden` → `NOT_AUTHORIZED {origin: "server"}`), and the
    /// devices page with the navigation.
    pub async fn start(user: User) -> Result<App, StartError> {
        let host = host_for(&user);
        let registry = registry_builder()
            .host_context(move || host.clone())
            .build();
        App::attach(registry, user).await
    }

    /// Starts the application on an existing registry (built from
    /// [`registry_builder`]; a test harness supplies its own host context).
    pub async fn attach(registry: Registry, user: User) -> Result<App, StartError> {
        let app = App::connect(registry, user).await?;
        let page = mount_page(&app.inner.registry, &app.inner.console)?;
        let navigation = app
            .inner
            .registry
            .mount(Arc::new(Navigation(Arc::clone(&app.inner.console))))?;
        *app.inner
            .page
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = page;
        *app.inner
            .navigation
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(navigation);
        let router: Weak<Inner> = Arc::downgrade(&app.inner);
        app.inner.console.on_navigate(move |route| {
            if let Some(inner) = router.upgrade() {
                inner.route(route);
            }
        });
        Ok(app)
    }

    /// Starts the application without mounting anything: the backend, its
    /// session and the console state. A user interface (the web console)
    /// mounts the components while it renders them.
    pub async fn connect(registry: Registry, user: User) -> Result<App, StartError> {
        let backend = Arc::new(Backend::demo());
        let server = BackendServer::new(Arc::clone(&backend), user.clone());
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let serving = server.clone();
        tokio::spawn(async move {
            if let Ok(running) = serving.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let session =
            ().serve(client_io)
                .await
                .map_err(|err| StartError::Backend(err.to_string()))?;
        let executor = McpExecutor::connect(session.peer().clone())
            .await
            .map_err(|err| StartError::Backend(err.to_string()))?;

        let mismatches = registry.set_procedure_executor(Some(Arc::new(executor)));
        if let Some(mismatch) = mismatches.first() {
            return Err(StartError::Manifest(mismatch.to_string()));
        }
        let console = Console::new(Arc::clone(&backend));
        Ok(App {
            inner: Arc::new(Inner {
                registry,
                console,
                backend,
                user,
                server,
                session: Mutex::new(Some(session)),
                page: Mutex::new(Vec::new()),
                navigation: Mutex::new(None),
            }),
        })
    }

    /// The registry the agent sees.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The console's state.
    pub fn console(&self) -> &Arc<Console> {
        &self.inner.console
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<Backend> {
        &self.inner.backend
    }

    /// The signed-in user.
    pub fn user(&self) -> &User {
        &self.inner.user
    }

    /// The backend's MCP server of this session (what it received).
    pub fn server(&self) -> &BackendServer {
        &self.inner.server
    }

    /// Unmounts everything and closes the backend session.
    pub async fn stop(&self) {
        self.inner
            .page
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.inner
            .navigation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let session = self
            .inner
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(session) = session {
            let _ = session.cancel().await;
        }
    }
}

impl Inner {
    /// The router: the devices page is mounted only on `/devices`.
    fn route(&self, route: Route) {
        let mut page = self.page.lock().unwrap_or_else(PoisonError::into_inner);
        match route {
            Route::Devices if page.is_empty() => match mount_page(&self.registry, &self.console) {
                Ok(mounted) => *page = mounted,
                Err(err) => tracing::error!(%err, "the devices page could not be mounted"),
            },
            Route::Devices => {}
            Route::Settings => {
                // Dropping the handles unmounts the page's components.
                let leaving = std::mem::take(&mut *page);
                drop(page);
                drop(leaving);
            }
        }
    }
}
