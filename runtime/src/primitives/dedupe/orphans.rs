//! Forgetting one consumer: when an adapter's session ends, its invocation
//! ids mean nothing any more. Its settled records go at once; its records
//! in flight become orphans — their calls still settle and their joiners
//! still hear the result, but nothing is kept, so the same identity later
//! is never replayed the forgotten session's result nor told
//! `INVOCATION_CONFLICT` by it. Orphans count against the consumer's
//! in-flight bound until they settle.

use std::sync::Arc;

use super::{Dedupe, Ledger, Orphan};

impl Dedupe {
    /// Drops every settled record of `consumer_key` and orphans its
    /// records in flight.
    pub(crate) fn forget_consumer(&mut self, consumer_key: &str) {
        let Some((consumer, mut ledger)) = self.consumers.remove_entry(consumer_key) else {
            return;
        };
        self.settled_count = self.settled_count.saturating_sub(ledger.records.len());
        self.settled_bytes = self.settled_bytes.saturating_sub(ledger.bytes);
        let running = std::mem::take(&mut ledger.running);
        self.running = self.running.saturating_sub(running.len());
        let orphans = ledger.orphans + running.len();
        for (_, record) in running {
            self.orphaned.insert(
                record.generation,
                Orphan {
                    consumer: Arc::clone(&consumer),
                    done: record.done,
                },
            );
        }
        if orphans > 0 {
            // Still bounded by them until they settle.
            let mut kept = Ledger::new(self.budget);
            kept.orphans = orphans;
            self.consumers.insert(consumer, kept);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)] // test code

    use std::sync::Arc;

    use super::super::{Begin, Dedupe, Key, WindowLimits};
    use crate::invocation::InvocationResult;

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
    fn a_forgotten_consumers_calls_in_flight_settle_into_nothing() {
        let mut dedupe = Dedupe::new(WindowLimits {
            count: 10,
            bytes: 1 << 20,
            ttl_ms: 1_000,
            in_flight_per_consumer: 1,
        });
        let k = key("mcp:gone", "1");
        let Begin::Leader(generation) = dedupe.begin(&k, 7, 0) else {
            panic!("a new attempt");
        };
        let Begin::Join(mut joiner) = dedupe.begin(&k, 7, 0) else {
            panic!("a joiner");
        };
        dedupe.forget_consumer("mcp:gone");
        // The orphan still counts against the bound.
        assert!(matches!(
            dedupe.begin(&key("mcp:gone", "2"), 7, 0),
            Begin::Busy
        ));
        let result = InvocationResult::new(
            Arc::clone(&k.1),
            Arc::from("view:t.c.a"),
            Ok(None),
            1,
            false,
        );
        dedupe.finish(&k, generation, &result, None, 0);
        assert!(joiner.borrow_and_update().is_some(), "the joiner heard it");
        // Nothing kept: the same id with other input is a new attempt.
        assert!(matches!(dedupe.begin(&k, 8, 0), Begin::Leader(_)));
        assert_eq!(dedupe.orphaned.len(), 0);
    }

    #[test]
    fn a_forgotten_consumers_ids_are_new_attempts_and_others_keep_theirs() {
        let mut dedupe = Dedupe::new(WindowLimits {
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
