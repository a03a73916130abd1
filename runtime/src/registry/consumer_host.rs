//! A consumer's own host context: an adapter that authenticated a consumer
//! (an MCP server validating bearer tokens) binds the host context of that
//! consumer's credential, so one registry serves several people at once.
//! Every evaluation for that consumer — discovery, authorization, handlers,
//! the procedure executor — reads the bound context; every other consumer
//! reads the registry's provider. Bindings are bounded
//! ([`MAX_BOUND_CONSUMERS`]); the adapter binds again on each request.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rustc_hash::FxHashMap;

use crate::context::{Consumer, HostContext};
use crate::registry::{Inner, Registry};

/// The most consumers with a bound host context at once; binding one more
/// drops the binding renewed longest ago (whose consumer reads the
/// registry's provider until its adapter binds it again, on its next
/// request — so with authenticating adapters, let the provider answer the
/// unauthenticated context).
pub const MAX_BOUND_CONSUMERS: usize = 4096;

/// The bound host contexts, by consumer key.
#[derive(Default)]
pub(crate) struct BoundHosts {
    /// Each binding and when it was last renewed (a counter); made by the
    /// first binding, so a registry no adapter binds (the common case)
    /// reads its provider without taking a lock and is created without it.
    by_key: std::sync::OnceLock<Box<Mutex<(Bindings, u64)>>>,
}

/// Each consumer key's context and the moment it was last bound.
type Bindings = FxHashMap<Arc<str>, (HostContext, u64)>;

impl BoundHosts {
    fn lock(&self) -> Option<MutexGuard<'_, (Bindings, u64)>> {
        let by_key = self.by_key.get()?;
        Some(by_key.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn get(&self, key: &str) -> Option<HostContext> {
        self.lock()?.0.get(key).map(|(host, _)| host.clone())
    }

    fn bind(&self, key: &Arc<str>, host: HostContext) {
        let mut guard = self
            .by_key
            .get_or_init(Box::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (by_key, clock) = &mut *guard;
        *clock += 1;
        if !by_key.contains_key(key)
            && by_key.len() >= MAX_BOUND_CONSUMERS
            && let Some(oldest) = by_key
                .iter()
                .min_by_key(|(_, (_, renewed))| *renewed)
                .map(|(key, _)| Arc::clone(key))
        {
            by_key.remove(&oldest);
        }
        by_key.insert(Arc::clone(key), (host, *clock));
    }

    pub(crate) fn unbind(&self, key: &str) {
        if let Some(mut by_key) = self.lock() {
            by_key.0.remove(key);
        }
    }
}

impl Inner {
    /// The host context `consumer_key` evaluates with: its bound context,
    /// else the provider's.
    pub(crate) fn host_for(&self, consumer_key: &str) -> HostContext {
        self.bound_hosts
            .get(consumer_key)
            .unwrap_or_else(|| self.host())
    }
}

impl Registry {
    /// Binds `host` as `consumer`'s own host context (replacing an earlier
    /// binding): what its discovery, policies and handlers read instead of
    /// the provider's. For adapters that authenticate each consumer from
    /// its credential; [`forget_consumer`](Registry::forget_consumer) and
    /// [`unbind_host_context`](Registry::unbind_host_context) end it.
    ///
    /// ```
    /// use agent_surface::context::{Consumer, ConsumerKind, HostContext};
    /// use agent_surface::Registry;
    /// use serde_json::json;
    ///
    /// let registry = Registry::default();
    /// let ada = Consumer::new(ConsumerKind::Mcp, "ada");
    /// registry.bind_host_context(&ada, HostContext::new().with("user", json!({"id": "ada"})));
    /// assert!(registry.host_context_for(&ada).get("user").is_some());
    /// assert!(registry.host_context().get("user").is_none());
    /// ```
    pub fn bind_host_context(&self, consumer: &Consumer, host: HostContext) {
        self.inner.bound_hosts.bind(consumer.key(), host);
    }

    /// Ends `consumer`'s binding: it reads the provider's context again.
    pub fn unbind_host_context(&self, consumer: &Consumer) {
        self.inner.bound_hosts.unbind(consumer.key());
    }

    /// The host context `consumer` is evaluated with now: its bound context
    /// ([`bind_host_context`](Registry::bind_host_context)), else the
    /// provider's ([`host_context`](Registry::host_context)).
    pub fn host_context_for(&self, consumer: &Consumer) -> HostContext {
        self.inner.host_for(consumer.key())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use serde_json::json;

    use super::MAX_BOUND_CONSUMERS;
    use crate::Registry;
    use crate::context::{Consumer, ConsumerKind, HostContext};

    fn user(id: &str) -> HostContext {
        HostContext::new().with("user", json!({"id": id}))
    }

    #[test]
    fn a_bound_context_is_the_consumers_alone_until_forgotten() {
        let registry = Registry::builder()
            .host_context(|| user("provider"))
            .build();
        let ada = Consumer::new(ConsumerKind::Mcp, "ada");
        let bob = Consumer::new(ConsumerKind::Mcp, "bob");
        registry.bind_host_context(&ada, user("ada"));
        let id = |c: &Consumer| registry.host_context_for(c).get("user").cloned().unwrap();
        assert_eq!(id(&ada), json!({"id": "ada"}));
        assert_eq!(id(&bob), json!({"id": "provider"}));
        registry.forget_consumer(&ada);
        assert_eq!(id(&ada), json!({"id": "provider"}));
    }

    #[test]
    fn bindings_are_bounded_and_the_stalest_goes_first() {
        let registry = Registry::default();
        let consumer = |n: usize| Consumer::new(ConsumerKind::Mcp, format!("c{n}"));
        for n in 0..MAX_BOUND_CONSUMERS {
            registry.bind_host_context(&consumer(n), user("x"));
        }
        // Renewed: no longer the stalest.
        registry.bind_host_context(&consumer(0), user("x"));
        registry.bind_host_context(&consumer(MAX_BOUND_CONSUMERS), user("x"));
        let bound = |n: usize| {
            registry
                .host_context_for(&consumer(n))
                .get("user")
                .is_some()
        };
        assert!(bound(0));
        assert!(!bound(1), "the stalest binding was dropped");
        assert!(bound(MAX_BOUND_CONSUMERS));
        assert_eq!(
            registry.inner.bound_hosts.lock().unwrap().0.len(),
            MAX_BOUND_CONSUMERS
        );
    }
}
