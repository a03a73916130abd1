//! The devices example: a small device-fleet console — a filter bar, a
//! table, a detail drawer and navigation — whose agent surface is declared
//! with the `agent-surface` macros, backed by a backend that owns the devices.

pub mod app;
pub mod backend;
pub mod components;
pub mod domain;
pub mod scenario;
pub mod server;
pub mod web;

pub use app::{
    App, StartError, host_for, mount_page, present, registry_builder, registry_builder_for,
    registry_for, registry_for_authenticated,
};
pub use backend::{Backend, City, Device, Status};
pub use components::{Console, DevicesTable, Drawer, FilterBar, Navigation, disable_reference};
pub use domain::{DisableDevices, Disabled};
pub use server::{BackendServer, User};

use std::sync::Arc;

use agent_surface::registry::{MountError, Mounted, Registry};

/// Mounts the devices page and the app navigation on `registry` (without
/// the router: navigation changes the route only). Dropping the handles
/// unmounts them.
pub fn mount_console(
    registry: &Registry,
    console: &Arc<Console>,
) -> Result<Vec<Mounted>, MountError> {
    let mut mounted = mount_page(registry, console)?;
    mounted.push(registry.mount(Arc::new(Navigation(Arc::clone(console))))?);
    Ok(mounted)
}

/// The reviewed surface: the committed contract artifact, compiled in.
pub const CONTRACT_ARTIFACT: &str = include_str!("../agent-surface.contract.json");

/// Pins a registry to the reviewed surface ([`CONTRACT_ARTIFACT`]): a
/// binary whose components drifted from what review approved mounts
/// nothing (`cargo agent-surface snapshot` after changing the surface, and
/// review the diff). The application binary pins; tests that link
/// components of their own do not.
pub fn pinned(
    builder: agent_surface::registry::RegistryBuilder,
) -> agent_surface::registry::RegistryBuilder {
    builder.expect_artifact(CONTRACT_ARTIFACT)
}
