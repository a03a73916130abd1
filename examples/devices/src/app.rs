//! The whole application: the backend and its MCP face, the console, the
//! registry the agent sees, and the router that mounts pages.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use agent_surface::ErrorPayload;
use agent_surface::confirmation::{Presentation, PresentationRequest};

use crate::backend::Device;
use agent_surface::context::HostContext;
use agent_surface::procedure::mcp::McpExecutor;
use agent_surface::registry::{MountError, Mounted, Registry, RegistryBuilder};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

use crate::backend::Backend;
use crate::components::disable_reference;
use crate::components::{Console, DevicesTable, Drawer, FilterBar, Navigation, Route};
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
/// the person's terms (see [`present`]) from the fleet of `backend` (the
/// demo fleet as it starts, without one).
pub fn registry_builder_for(backend: Option<Arc<Backend>>) -> RegistryBuilder {
    Registry::builder()
        .procedure_errors(|_, error| match error.code() {
            Some("forbidden") => Some(ErrorPayload::not_authorized(
                agent_surface::error::Origin::Server,
            )),
            _ => None,
        })
        .confirmation_presenter(move |request| {
            let devices = match &backend {
                Some(backend) => backend.query(None, None),
                None => Backend::demo().query(None, None),
            };
            present(request, &devices)
        })
}

/// [`registry_builder_for`] without a live backend.
pub fn registry_builder() -> RegistryBuilder {
    registry_builder_for(None)
}

/// The registry of the console for `user` on a fresh demo backend: the host
/// context is the user, with the backend as a typed extension, which
/// [`App::connect`] then serves.
pub fn registry_for(
    user: &User,
    configure: impl FnOnce(RegistryBuilder) -> RegistryBuilder,
) -> Registry {
    let backend = Arc::new(Backend::demo());
    let host = host_for(user).with_extension(Arc::clone(&backend));
    configure(registry_builder_for(Some(backend)))
        .host_context(move || host.clone())
        .build()
}

/// The registry of the console for callers authenticated per request (MCP
/// over HTTP with bearer tokens): each identity's own host context is bound
/// by the MCP server; the provider's — what anyone else, or an identity
/// whose binding lapsed, is evaluated with — has no user, so it fails
/// closed. It carries the backend, which [`App::connect`] serves.
pub fn registry_for_authenticated(
    configure: impl FnOnce(RegistryBuilder) -> RegistryBuilder,
) -> Registry {
    let backend = Arc::new(Backend::demo());
    let host = HostContext::new().with_extension(Arc::clone(&backend));
    configure(registry_builder_for(Some(backend)))
        .host_context(move || host.clone())
        .build()
}

/// A confirmation in the person's terms: "Disable 3 devices: Air sensor
/// Navigli, …" on a red "Disable 3 devices" button, every device listed with
/// its status and city, and the agent's own reason labelled as its words.
/// Device names, never ids (an id the fleet does not know is shown as
/// "unknown device d99"); other capabilities keep the default presentation.
pub fn present(request: &PresentationRequest<'_>, fleet: &[Device]) -> Option<Presentation> {
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
    let found: Vec<(String, String)> = ids
        .iter()
        .map(|id| match fleet.iter().find(|device| device.id == *id) {
            Some(device) => (
                device.name.clone(),
                format!(
                    "{} — {}, {}",
                    device.name,
                    device.status.as_str(),
                    device.city
                ),
            ),
            None => (
                format!("unknown device {id}"),
                format!("unknown device {id}"),
            ),
        })
        .collect();
    let count = match found.len() {
        1 => "1 device".to_owned(),
        n => format!("{n} devices"),
    };
    let names: Vec<&str> = found.iter().map(|(name, _)| name.as_str()).collect();
    let title = match names.as_slice() {
        [] => format!("Disable {count}"),
        [one] => format!("Disable {count}: {one}"),
        [a, b] => format!("Disable {count}: {a} and {b}"),
        [a, b, c] => format!("Disable {count}: {a}, {b} and {c}"),
        _ => format!("Disable {count}"),
    };
    let mut presentation = Presentation::new(
        title,
        format!("Disable {count}"),
        "Disabled devices stop reporting and cannot be used until someone enables them again.",
    )
    .items(found.into_iter().map(|(_, line)| line));
    if let Some(reason) = request
        .input
        .get("reason")
        .and_then(serde_json::Value::as_str)
    {
        presentation = presentation.agent_note(reason);
    }
    Some(presentation)
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
        let registry = registry_for(&user, |builder| builder);
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
        // The backend the registry's host context names (see
        // [`registry_for`]), or a fresh demo backend.
        let backend = registry
            .host_context()
            .extension::<Arc<Backend>>()
            .cloned()
            .unwrap_or_else(|| Arc::new(Backend::demo()));
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
