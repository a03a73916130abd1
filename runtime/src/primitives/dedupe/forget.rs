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

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)] // test code

    use std::sync::Arc;

    use super::super::{Begin, Budget, Dedupe, Key};
    use crate::call::InvocationResult;

    fn key(consumer: &str, id: &str) -> Key {
        (Arc::from(consumer), Arc::from(id))
    }

    fn settle(dedupe: &mut Dedupe, k: &Key) {
        let Begin::Leader(generation) = dedupe.begin(k, 7, 0) else {
            panic!("a new attempt");
        };
        let result = InvocationResult::new(
            Arc::clone(&k.1),
            Arc::from("view:t.c.a"),
            Ok(None),
            1,
            false,
        );
        dedupe.finish(k, generation, &result, None, 0);
    }

    #[test]
    fn a_forgotten_consumers_ids_are_new_attempts_and_others_keep_theirs() {
        let mut dedupe = Dedupe::new(Budget {
            count: 10,
            bytes: 1 << 20,
            ttl_ms: 1_000,
            in_flight_per_consumer: 4,
        });
        settle(&mut dedupe, &key("mcp:gone", "1"));
        settle(&mut dedupe, &key("mcp:gone", "2"));
        settle(&mut dedupe, &key("mcp:kept", "1"));
        dedupe.forget_consumer("mcp:gone");
        assert_eq!(dedupe.len(), 1);
        assert!(matches!(
            dedupe.begin(&key("mcp:gone", "1"), 8, 0),
            Begin::Leader(_)
        ));
        assert!(matches!(
            dedupe.begin(&key("mcp:kept", "1"), 8, 0),
            Begin::Conflict
        ));
    }
}
