//! The registry as a Dioxus context.

use agent_surface::Registry;
use dioxus_core::{provide_context, try_consume_context, use_hook};

/// Makes the registry `make` returns (called once, on the first render) the
/// agent surface of this component and its descendants, and returns it.
///
/// A `VirtualDom` built with `.with_root_context(registry)` provides it to
/// the whole tree without this hook.
pub fn use_agent_surface_provider(make: impl FnOnce() -> Registry) -> Registry {
    use_hook(|| provide_context(make()))
}

/// The registry provided by an ancestor ([`use_agent_surface_provider`] or
/// the `VirtualDom`'s root context), read once on the first render; `None`
/// when there is none.
pub fn use_registry() -> Option<Registry> {
    use_hook(try_consume_context::<Registry>)
}
