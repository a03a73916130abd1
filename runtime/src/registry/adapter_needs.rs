//! What an adapter needs from a registry handle beyond invoking and
//! observing: fresh invocation ids for calls that bring none, and the
//! consumer that stands for a caller no host identified.

use crate::context::Consumer;

use super::Registry;

impl Registry {
    /// A fresh invocation id (`inv_<registry prefix>_<counter>`), for a
    /// call that came without one: unique within this registry, never a
    /// deduplication key (calls without an id are not deduplicated).
    ///
    /// ```
    /// let registry = agent_surface::Registry::default();
    /// let (a, b) = (registry.mint_invocation_id(), registry.mint_invocation_id());
    /// assert!(a.starts_with("inv_"));
    /// assert_ne!(a, b);
    /// ```
    pub fn mint_invocation_id(&self) -> String {
        self.inner.ids.invocation_id()
    }

    /// The consumer an adapter uses when its host named none: an anonymous
    /// agent, which policies such as `authenticated()` refuse.
    pub fn anonymous_consumer(&self) -> &'static Consumer {
        self.inner.anonymous
    }
}
