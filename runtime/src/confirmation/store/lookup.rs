//! Reading records without changing them: whether evidence is an approval
//! of a registration's capability for a consumer, how an ended record
//! ended, and how a record was resolved.

use super::{ConfirmationStore, Stage};
use crate::confirmation::services::ConfirmationServices;
use crate::confirmation::{ConfirmationOutcome, Resolution};

impl ConfirmationStore {
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

    pub(in crate::confirmation) fn ended_outcome<S: ConfirmationServices + ?Sized>(
        &self,
        services: &S,
        confirmation_id: &str,
    ) -> Option<ConfirmationOutcome> {
        let now = services.clock_ms();
        let store = self.lock();
        let ended = store.ended.as_ref()?.peek(confirmation_id, now)?;
        Some(match ended.stage {
            Stage::Denied => ConfirmationOutcome::Denied,
            Stage::Expired => ConfirmationOutcome::Expired,
            Stage::Withdrawn => ConfirmationOutcome::Withdrawn,
            _ => ConfirmationOutcome::Approved,
        })
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
