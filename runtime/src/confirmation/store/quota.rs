//! The pending list's fair share, counted per principal
//! ([`Consumer::principal`](crate::context::Consumer::principal)): a
//! principal holds at most `max_pending_confirmations_per_consumer` open
//! requests whatever the number of identities it acts through, and when
//! the registry's list is full, a principal asking for less than the
//! heaviest holder gets room by withdrawing that holder's oldest *pending*
//! request (reason `displaced`; an approved or reserved one is never
//! touched). So identities that come in numbers (the sessions of one
//! client, stateless callers an adapter puts under one principal) cannot
//! fill the list and starve everyone else: a newcomer principal's first
//! request is servable unless `max_pending_confirmations` principals each
//! already hold one. Inside a principal's share its identities take turns:
//! one whose share is used up gets room from the identity holding the most
//! (at least as many as the asker); an identity at its fair part, or alone,
//! is refused.

use std::sync::Arc;

use super::{Stage, Store};

/// Why a request was withdrawn to make room for another consumer's.
pub(crate) const DISPLACED: &str = "displaced";

/// The request to withdraw so `consumer`, acting for `share` whose share
/// is used up, gets room inside it: the oldest pending request of the
/// share's other identity holding the most, when it holds at least as many
/// as `consumer`. `None` (refused, `RATE_LIMITED queue-full`) otherwise: an
/// identity at its fair part of the share, or alone in it, waits.
pub(super) fn within_share(store: &Store, share: &str, consumer: &str) -> Option<Option<Arc<str>>> {
    let mut counts: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    for record in store.open.values() {
        if record.stage == Stage::Pending && *record.share == *share {
            *counts.entry(&record.view.consumer_key).or_insert(0) += 1;
        }
    }
    let own = counts.get(consumer).copied().unwrap_or(0);
    let most = counts
        .iter()
        .filter(|(identity, count)| **identity != consumer && **count >= own.max(1))
        .map(|(_, count)| *count)
        .max()?;
    oldest(store, |record| {
        *record.share == *share
            && *record.view.consumer_key != *consumer
            && counts.get(&*record.view.consumer_key) == Some(&most)
    })
    .map(Some)
}

/// The oldest pending request `matching`.
fn oldest(store: &Store, matching: impl Fn(&super::Record) -> bool) -> Option<Arc<str>> {
    store
        .open
        .iter()
        .filter(|(_, record)| record.stage == Stage::Pending && matching(record))
        .min_by(|a, b| {
            (a.1.view.requested_at.as_str(), a.0).cmp(&(b.1.view.requested_at.as_str(), b.0))
        })
        .map(|(id, _)| Arc::clone(id))
}

/// The request to withdraw so `asker` (a share holding `held`) gets room
/// in a full list: the oldest pending request of the share holding the
/// most, when that is more than `held + 1`.
pub(super) fn displaceable(store: &Store, asker: &str, held: usize) -> Option<Option<Arc<str>>> {
    let mut counts: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    for record in store.open.values() {
        if record.stage == Stage::Pending {
            *counts.entry(&record.share).or_insert(0) += 1;
        }
    }
    let (heaviest, most) = counts
        .into_iter()
        .filter(|(consumer, _)| *consumer != asker)
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))?;
    if most <= held + 1 {
        return None;
    }
    oldest(store, |record| *record.share == *heaviest).map(Some)
}
