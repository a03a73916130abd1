//! The fixture application: the fleet, the console and the registry an
//! agent sees, for one signed-in user (admin or viewer) given to policies
//! through the host context; its router mounts the devices page on
//! `/devices` only.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use agent_surface::registry::{Mounted, Registry};

use super::console::{
    Console, DevicesTable, Drawer, FilterBar, Navigation, Route, disable_reference,
};
use super::fleet::{Backend, FleetExecutor, User};

struct Inner {
    registry: Registry,
    console: Arc<Console>,
    backend: Arc<Backend>,
    executor: Arc<FleetExecutor>,
    page: Mutex<Vec<Mounted>>,
    navigation: Mutex<Option<Mounted>>,
}

/// The application, running for one user.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

/// Mounts the devices page: the filter bar, the table (with its reference
/// to `domain:devices.disable`) and the drawer.
fn mount_page(registry: &Registry, console: &Arc<Console>) -> Vec<Mounted> {
    vec![
        registry
            .mount(Arc::new(FilterBar(Arc::clone(console))))
            .expect("the filter bar mounts"),
        registry
            .mounting(Arc::new(DevicesTable(Arc::clone(console))))
            .procedure(disable_reference(console))
            .mount()
            .expect("the table mounts"),
        registry
            .mount(Arc::new(Drawer(Arc::clone(console))))
            .expect("the drawer mounts"),
    ]
}

impl App {
    /// Starts the application for `user` on a fresh fleet: the registry
    /// (host context = the user), the backend's executor, the devices page
    /// and the navigation.
    pub async fn start(user: User) -> App {
        let backend = Arc::new(Backend::fleet());
        let host = user.host();
        let registry = Registry::builder()
            .host_context(move || host.clone())
            .build();
        let executor = Arc::new(FleetExecutor::new(Arc::clone(&backend), user));
        let mismatches = registry.set_procedure_executor(Some(Arc::clone(&executor) as _));
        assert!(mismatches.is_empty(), "{mismatches:?}");
        let console = Console::new(Arc::clone(&backend));
        let page = mount_page(&registry, &console);
        let navigation = registry
            .mount(Arc::new(Navigation(Arc::clone(&console))))
            .expect("the navigation mounts");
        let inner = Arc::new(Inner {
            registry,
            console,
            backend,
            executor,
            page: Mutex::new(page),
            navigation: Mutex::new(Some(navigation)),
        });
        let router: Weak<Inner> = Arc::downgrade(&inner);
        inner.console.on_navigate(move |route| {
            if let Some(inner) = router.upgrade() {
                inner.route(route);
            }
        });
        App { inner }
    }

    /// The registry the agent sees.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The console's state.
    pub fn console(&self) -> &Arc<Console> {
        &self.inner.console
    }

    /// The fleet.
    pub fn backend(&self) -> &Arc<Backend> {
        &self.inner.backend
    }

    /// The inputs of every procedure call the backend received.
    pub fn received(&self) -> Vec<serde_json::Value> {
        self.inner.executor.received()
    }

    /// Unmounts everything.
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
    }
}

impl Inner {
    /// The router: the devices page is mounted only on `/devices`.
    fn route(&self, route: Route) {
        let mut page = self.page.lock().unwrap_or_else(PoisonError::into_inner);
        match route {
            Route::Devices if page.is_empty() => *page = mount_page(&self.registry, &self.console),
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
