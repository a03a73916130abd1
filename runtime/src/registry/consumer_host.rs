//! The host context a consumer is evaluated with: its own, when the adapter
//! that authenticated it gave it one
//! ([`Consumer::with_host_context`]), else the registry's provider. The
//! context travels with the consumer — into every call it makes, from the
//! transport to settlement — so one registry serves several people at once
//! and nothing is kept (or evicted) on the registry's side.

use crate::context::{Consumer, HostContext};
use crate::registry::{Registry, Services};

impl Services {
    /// The host context `consumer` evaluates with: its own, else the
    /// provider's.
    pub(crate) fn host_for(&self, consumer: &Consumer) -> HostContext {
        match consumer.host_context() {
            Some(own) => own.clone(),
            None => self.host(),
        }
    }
}

impl Registry {
    /// The host context `consumer` is evaluated with now: its own
    /// ([`Consumer::with_host_context`]), else the provider's
    /// ([`host_context`](Registry::host_context)).
    ///
    /// ```
    /// use agent_surface::context::{Consumer, ConsumerKind, HostContext};
    /// use agent_surface::Registry;
    /// use serde_json::json;
    ///
    /// let registry = Registry::builder()
    ///     .host_context(|| HostContext::new().with("user", json!({"id": "operator"})))
    ///     .build();
    /// let ada = Consumer::new(ConsumerKind::Mcp, "ada")
    ///     .with_host_context(HostContext::new().with("user", json!({"id": "ada"})));
    /// let bob = Consumer::new(ConsumerKind::Mcp, "bob");
    /// assert_eq!(registry.host_context_for(&ada).get("user"), Some(&json!({"id": "ada"})));
    /// assert_eq!(registry.host_context_for(&bob).get("user"), Some(&json!({"id": "operator"})));
    /// ```
    pub fn host_context_for(&self, consumer: &Consumer) -> HostContext {
        self.inner.host_for(consumer)
    }
}
