//! `use_agent_component`: a component's mount follows its scope.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use agent_surface::registry::{MountError, RegistrationStatus};
use agent_surface::{Component, Mounted, Registry};
use dioxus_core::{use_after_render, use_drop, use_hook};

use crate::provider::use_registry;

/// Why a component's capabilities are not mounted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentMountError {
    /// No ancestor provides a registry.
    NoRegistry,
    /// The registry refused the mount (its message).
    Mount(String),
}

impl fmt::Display for AgentMountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentMountError::NoRegistry => {
                f.write_str("no registry: provide one with use_agent_surface_provider")
            }
            AgentMountError::Mount(message) => write!(f, "mounting failed: {message}"),
        }
    }
}

impl std::error::Error for AgentMountError {}

struct Slot<K> {
    /// The key of the current mount; `None` before the first render.
    key: Option<K>,
    mounted: Option<Mounted>,
    error: Option<AgentMountError>,
}

trait SlotView {
    fn mounted(&self) -> Option<&Mounted>;
    fn error(&self) -> Option<&AgentMountError>;
}

impl<K> SlotView for Slot<K> {
    fn mounted(&self) -> Option<&Mounted> {
        self.mounted.as_ref()
    }

    fn error(&self) -> Option<&AgentMountError> {
        self.error.as_ref()
    }
}

/// The mount of one rendered component: what the hooks return. Cheap to
/// clone; every clone sees the same mount, which ends with the component's
/// scope whoever still holds a clone.
#[derive(Clone)]
pub struct AgentHandle {
    slot: Rc<RefCell<dyn SlotView>>,
}

impl PartialEq for AgentHandle {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.slot, &other.slot)
    }
}

impl fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentHandle")
            .field("registration_id", &self.registration_id())
            .field("error", &self.error())
            .finish()
    }
}

impl AgentHandle {
    fn with<R>(&self, f: impl FnOnce(&Mounted) -> R) -> Option<R> {
        let slot = self.slot.try_borrow().ok()?;
        slot.mounted().map(f)
    }

    /// The current registration id (`reg_…`), while mounted and active.
    pub fn registration_id(&self) -> Option<String> {
        self.with(|mounted| {
            (mounted.status() == RegistrationStatus::Active)
                .then(|| mounted.registration_id().to_owned())
        })
        .flatten()
    }

    /// Active, rejected (duplicate instance, registration guard) or
    /// unregistered; `None` when nothing was mounted (see [`error`](Self::error)).
    pub fn status(&self) -> Option<RegistrationStatus> {
        self.with(Mounted::status)
    }

    /// Why nothing is mounted, if that is the case.
    pub fn error(&self) -> Option<AgentMountError> {
        self.slot.try_borrow().ok()?.error().cloned()
    }

    /// Re-evaluates availability now ([`Mounted::invalidate`]): for state
    /// that changed outside a render of this component. Returns whether
    /// the surface changed.
    pub fn invalidate(&self) -> bool {
        self.with(Mounted::invalidate).unwrap_or(false)
    }

    /// The master switch ([`Mounted::set_enabled`]).
    pub fn set_enabled(&self, enabled: bool) {
        self.with(|mounted| mounted.set_enabled(enabled));
    }

    /// An availability override for one capability
    /// ([`Mounted::set_availability`]).
    pub fn set_availability(
        &self,
        capability: &str,
        availability: agent_surface::registry::AvailabilityOverride<'_>,
    ) -> bool {
        self.with(|mounted| mounted.set_availability(capability, availability))
            .unwrap_or(false)
    }
}

/// Mounts `component()` (called on the first render only) under its
/// contract's default instance while this Dioxus component is rendered;
/// see [`use_agent_mount`].
pub fn use_agent_component<T: Component>(component: impl FnOnce() -> Arc<T>) -> AgentHandle {
    use_agent_mount((), move |registry| registry.mount(component()))
}

/// Mounts `component()` under `instance` (derive it from data — an entity
/// id — never from render order), for components rendered once per list
/// item. When a later render passes another instance id, the old mount is
/// removed and `component()` is mounted again under the new one.
pub fn use_agent_instance<T: Component>(
    instance: &str,
    component: impl FnOnce() -> Arc<T>,
) -> AgentHandle {
    use_agent_mount(instance.to_owned(), move |registry| {
        registry.mount_instance(component(), instance)
    })
}

/// The general hook: runs `mount` against the provided registry on the
/// first render and whenever `key` differs from the previous render's
/// (the old mount is dropped first), and keeps the [`Mounted`] handle
/// until the key changes or the component's scope is dropped (which
/// unmounts it). After every render of this component it calls
/// [`Mounted::invalidate`]: when the availability the registration's `when`
/// predicates compute changed, every consumer hears it; when nothing
/// changed, nothing is emitted. Rendering twice never mounts twice.
pub fn use_agent_mount<K: PartialEq + 'static>(
    key: K,
    mount: impl FnOnce(&Registry) -> Result<Mounted, MountError>,
) -> AgentHandle {
    let registry = use_registry();
    let slot: Rc<RefCell<Slot<K>>> = use_hook(|| {
        Rc::new(RefCell::new(Slot {
            key: None,
            mounted: None,
            error: None,
        }))
    });
    let stale = slot
        .try_borrow()
        .map(|slot| slot.key.as_ref() != Some(&key))
        .unwrap_or(false);
    if stale {
        // Unmount the old mount before mounting under the new key, so a
        // kept instance id is not refused as a duplicate of itself.
        let old = slot
            .try_borrow_mut()
            .ok()
            .and_then(|mut s| s.mounted.take());
        drop(old);
        let (mounted, error) = match &registry {
            None => (None, Some(AgentMountError::NoRegistry)),
            Some(registry) => match mount(registry) {
                Ok(mounted) => (Some(mounted), None),
                Err(err) => (None, Some(AgentMountError::Mount(err.to_string()))),
            },
        };
        if let Ok(mut current) = slot.try_borrow_mut() {
            current.key = Some(key);
            current.mounted = mounted;
            current.error = error;
        }
    }
    let after = Rc::clone(&slot);
    use_after_render(move || {
        if let Ok(current) = after.try_borrow()
            && let Some(mounted) = &current.mounted
        {
            mounted.invalidate();
        }
    });
    let dropped = Rc::clone(&slot);
    use_drop(move || {
        let mounted = dropped
            .try_borrow_mut()
            .ok()
            .and_then(|mut s| s.mounted.take());
        drop(mounted);
    });
    AgentHandle { slot }
}
