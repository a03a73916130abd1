//! Reading records without changing them: whether evidence is an approval
//! of a registration's capability for a consumer, a pending record, and
//! how a record was resolved.

use std::sync::Arc;

use serde_json::Value;

use super::{Binding, ConfirmationStore, Stage, required_payload};
use crate::confirmation::services::ConfirmationServices;
use crate::confirmation::{PendingConfirmation, Resolution};
use crate::error::ErrorPayload;

impl ConfirmationStore {
    /// The `CONFIRMATION_REQUIRED` answer of an identical request already
    /// pending (an agent asking again while the person reads), so the
    /// caller skips presenting it anew. `live` is asked under the store's
    /// lock as [`request`](Self::request) asks it: a registration an unmount
    /// has marked gone answers `COMPONENT_UNMOUNTED`, never a request its
    /// withdrawal is about to end.
    pub(crate) fn already_pending(
        &self,
        binding: &Binding<'_>,
        live: impl Fn() -> bool,
    ) -> Option<ErrorPayload> {
        let (canonical, digest) = binding.canonical();
        let store = self.lock();
        if !live() {
            return Some(ErrorPayload::unmounted(
                crate::error::UnmountedPhase::MidFlight,
            ));
        }
        store
            .open
            .values()
            .find(|r| r.stage == Stage::Pending && r.digest == digest && r.binding == canonical)
            .map(|record| required_payload(&record.view))
    }

    /// The requests of `registration_id` still waiting for the person: id,
    /// capability and the input they bind. Nothing is made for a store
    /// never used (asked after every render).
    pub(crate) fn waiting_of(&self, registration_id: &str) -> Vec<(Arc<str>, Arc<str>, Value)> {
        if !self.made() {
            return Vec::new();
        }
        self.lock()
            .open
            .values()
            .filter(|r| r.stage == Stage::Pending && *r.view.registration_id == *registration_id)
            .map(|r| {
                (
                    Arc::clone(&r.view.confirmation_id),
                    Arc::clone(&r.view.capability_id),
                    r.view.input.clone(),
                )
            })
            .collect()
    }

    /// The record `confirmation_id` while it is pending.
    pub(in crate::confirmation) fn find(
        &self,
        confirmation_id: &str,
    ) -> Option<PendingConfirmation> {
        self.lock()
            .open
            .get(confirmation_id)
            .filter(|record| record.stage == Stage::Pending)
            .map(|record| record.view.clone())
    }

    /// Whether `confirmation_id` is approved (not yet reserved) evidence
    /// for `capability_id` of `registration_id`, asked by `consumer_key`.
    pub(crate) fn is_approved_for(
        &self,
        confirmation_id: &str,
        registration_id: &str,
        capability_id: &str,
        consumer_key: &str,
    ) -> bool {
        self.lock().open.get(confirmation_id).is_some_and(|record| {
            matches!(record.stage, Stage::Approved { .. })
                && *record.view.registration_id == *registration_id
                && *record.view.capability_id == *capability_id
                && *record.view.consumer_key == *consumer_key
        })
    }

    /// The approved records still open (approved or reserved), with when
    /// each was approved (the relay's, which a page has not).
    #[cfg_attr(all(target_arch = "wasm32", target_os = "unknown"), allow(dead_code))]
    pub(in crate::confirmation) fn approved(&self) -> Vec<(PendingConfirmation, String)> {
        self.lock()
            .open
            .values()
            .filter(|record| {
                matches!(
                    record.stage,
                    Stage::Approved { .. } | Stage::Reserved { .. }
                )
            })
            .filter_map(|record| {
                let at = record.resolution.as_ref()?.at.clone();
                Some((record.view.clone(), at))
            })
            .collect()
    }

    /// Whether this store holds `confirmation_id`, open or remembered as
    /// ended.
    pub(in crate::confirmation) fn knows<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &str,
    ) -> bool {
        let now = services.clock_ms();
        let mut store = self.lock();
        store.open.contains_key(confirmation_id)
            || store
                .ended
                .as_mut()
                .is_some_and(|ended| ended.peek(confirmation_id, now).is_some())
    }

    /// How `confirmation_id` was resolved: an approved or reserved open
    /// record's approval, or an ended record's outcome.
    pub(in crate::confirmation) fn resolution<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &str,
    ) -> Option<Resolution> {
        let now = services.clock_ms();
        let store = self.lock();
        if let Some(record) = store.open.get(confirmation_id) {
            return record.resolution.clone();
        }
        store
            .ended
            .as_ref()?
            .peek(confirmation_id, now)
            .map(|ended| ended.resolution.clone())
    }
}
