//! The pending list's fair share: when the registry's list is full, a
//! consumer asking for less than the heaviest holder gets room by
//! withdrawing that holder's oldest *pending* request (reason `displaced`;
//! an approved or reserved one is never touched). So identities that come
//! in numbers (the sessions of one client, stateless callers) cannot fill
//! the list and starve everyone else: a newcomer's first request is
//! servable unless every holder already holds a single request.

use std::sync::Arc;

use super::{Stage, Store};

/// Why a request was withdrawn to make room for another consumer's.
pub(crate) const DISPLACED: &str = "displaced";

/// The request to withdraw so `asker` (holding `held`) gets room in a full
/// list: the oldest pending request of the consumer holding the most,
/// when that is more than `held + 1`.
pub(super) fn displaceable(store: &Store, asker: &str, held: usize) -> Option<Arc<str>> {
    let mut counts: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    for record in store.open.values() {
        if record.stage == Stage::Pending {
            *counts.entry(&record.view.consumer_key).or_insert(0) += 1;
        }
    }
    let (heaviest, most) = counts
        .into_iter()
        .filter(|(consumer, _)| *consumer != asker)
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))?;
    if most <= held + 1 {
        return None;
    }
    store
        .open
        .iter()
        .filter(|(_, record)| {
            record.stage == Stage::Pending && *record.view.consumer_key == *heaviest
        })
        .min_by(|a, b| {
            (a.1.view.requested_at.as_str(), a.0).cmp(&(b.1.view.requested_at.as_str(), b.0))
        })
        .map(|(id, _)| Arc::clone(id))
}
