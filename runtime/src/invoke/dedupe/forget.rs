//! Forgetting one consumer's settled records: when an adapter's session
//! ends, its invocation ids mean nothing any more. Records in flight stay
//! until their call settles (evicting one would let a retry run twice).

use super::Dedupe;

impl Dedupe {
    /// Drops every settled record of `consumer_key`.
    pub(crate) fn forget_consumer(&mut self, consumer_key: &str) {
        if let Some(ledger) = self.settled.remove(consumer_key) {
            self.settled_count = self.settled_count.saturating_sub(ledger.records.len());
            self.settled_bytes = self.settled_bytes.saturating_sub(ledger.bytes);
        }
    }
}
