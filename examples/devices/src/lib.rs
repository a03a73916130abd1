//! The devices example: a small device-fleet console — a filter bar, a
//! table, a detail drawer and navigation — whose agent surface is declared
//! with the `agent-surface` macros, backed by a backend that owns the devices.

pub mod backend;
pub mod components;
pub mod domain;
pub mod server;

pub use backend::{Backend, City, Device, Status};
pub use components::{Console, DevicesTable, Drawer, FilterBar, Navigation};
pub use domain::{DisableDevices, Disabled, disable_reference};
pub use server::{BackendServer, User};

use std::sync::Arc;

use agent_surface::registry::{MountError, Mounted, Registry};

/// Mounts the devices page — the filter bar, the table (with its reference
/// to `domain:devices.disable`), the drawer — and the app navigation.
/// Dropping the handles unmounts them.
pub fn mount_console(
    registry: &Registry,
    console: &Arc<Console>,
) -> Result<Vec<Mounted>, MountError> {
    Ok(vec![
        registry.mount(Arc::new(FilterBar(Arc::clone(console))))?,
        registry
            .mounting(Arc::new(DevicesTable(Arc::clone(console))))
            .procedure(disable_reference(console))
            .mount()?,
        registry.mount(Arc::new(Drawer(Arc::clone(console))))?,
        registry.mount(Arc::new(Navigation(Arc::clone(console))))?,
    ])
}
