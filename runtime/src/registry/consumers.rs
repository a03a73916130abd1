//! The registry's side of consumers, as adapters meet them: fresh
//! invocation ids for calls that bring none, the consumer that stands for a
//! caller no host identified, the host context each consumer is evaluated
//! with, and forgetting a consumer whose session ended.
//!
//! The host context is the consumer's own, when the adapter that
//! authenticated it gave it one ([`Consumer::with_host_context`]), else the
//! registry's provider. It travels with the consumer — into every call it
//! makes, from the transport to settlement — so one registry serves several
//! people at once and nothing is kept (or evicted) on the registry's side.
//!
//! Forgetting ([`Registry::forget_consumer`]) drops what the runtime
//! remembers for that consumer alone — its settled dedupe records and its
//! open confirmations — so nothing presenting the same identity later can
//! replay, conflict with or approve them.

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

    /// Forgets `consumer`'s settled dedupe records and expires its pending
    /// and approved confirmations (a confirmation reserved by a running
    /// call is settled by that call). Call it when a consumer's session ends
    /// for good (the MCP server does for its sessions): nobody presenting
    /// the same identity later can replay, conflict with or approve them.
    pub fn forget_consumer(&self, consumer: &Consumer) {
        let key = consumer.key();
        if let Some(mut dedupe) = self.inner.dedupe_if_made() {
            dedupe.forget_consumer(key);
        }
        self.inner
            .confirmations
            .withdraw_consumer(&*self.inner, key);
    }
}
