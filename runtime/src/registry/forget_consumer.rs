//! [`Registry::forget_consumer`]: an adapter whose session ended drops what
//! the runtime remembers for that consumer alone — its settled dedupe
//! records and its open confirmations — so nothing presenting the same
//! identity later can replay, conflict with or approve them.

use crate::context::Consumer;
use crate::registry::Registry;

impl Registry {
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
