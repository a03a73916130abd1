//! Two-phase memory of direct mode: a model that retries "the same call
//! again" (the same tool and canonical input) after the person approved is
//! given the confirmation its previous attempt was asked for.

use std::sync::PoisonError;

use serde_json::Value;

use super::{ConfirmationMode, Shared};
use crate::canonical::write_canonical;
use crate::error::ErrorCode;
use crate::invoke::InvocationResult;

impl Shared {
    /// Identifies "the same call again": the tool and the canonical input,
    /// under SipHash with the process's random key (an FNV-1a key could be
    /// steered: a call chosen to share another's key would be handed that
    /// call's confirmation). `None` unless the toolset is two-phase: no
    /// other toolset remembers anything, so none pays for the key.
    pub(in crate::adapter) fn retry_key(&self, name: &str, input: &Value) -> Option<u64> {
        static KEY: std::sync::OnceLock<std::hash::RandomState> = std::sync::OnceLock::new();
        if self.confirmations != ConfirmationMode::TwoPhase {
            return None;
        }
        let mut hasher = crate::canonical::Blocked::new(std::hash::BuildHasher::build_hasher(
            KEY.get_or_init(std::hash::RandomState::new),
        ));
        crate::canonical::write_string(name, &mut hasher);
        write_canonical(input, &mut hasher);
        Some(hasher.finish())
    }

    /// The confirmation a previous attempt of the same call was asked for.
    pub(in crate::adapter) fn remembered(&self, key: Option<u64>) -> Option<String> {
        let key = key?;
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, id)| id.clone())
    }

    /// Forgets the confirmation remembered for `key`: the call is settled
    /// as the agent sent it, without evidence.
    pub(in crate::adapter) fn unremember(&self, key: Option<u64>) {
        if let Some(key) = key {
            self.asked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|(k, _)| *k != key);
        }
    }

    /// Remembers a confirmation request (two-phase), forgets it once the
    /// call settled any other way. Bounded by the pending-confirmation limit.
    pub(in crate::adapter) fn remember(&self, key: Option<u64>, result: &InvocationResult) {
        let Some(key) = key else {
            return;
        };
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        asked.retain(|(k, _)| *k != key);
        let requested = result
            .error()
            .filter(|error| error.code() == ErrorCode::ConfirmationRequired)
            .and_then(|error| error.detail("confirmationId"))
            .and_then(Value::as_str);
        if let Some(id) = requested {
            let cap = self
                .registry
                .limits()
                .max_pending_confirmations_per_consumer
                .max(1);
            while asked.len() >= cap {
                asked.remove(0);
            }
            asked.push((key, id.to_owned()));
        }
    }
}
