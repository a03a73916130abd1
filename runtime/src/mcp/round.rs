//! An input-required round (2026-07-28): the record a round's state names,
//! kept here, and the result that asks the client.
//!
//! With a shared store (replicas behind a load balancer, where the
//! client's retry may land on any of them), a form round is also kept in
//! the store under its confirmation, while that is pending: its state then
//! names the confirmation after the secret (`rs_…​.cnf_…`), and the store
//! keeps only the secret's digest. The replica the retry lands on reads it
//! there, and carries the answer to the replica holding the request.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use rmcp::model::{CallToolResponse, ElicitRequest, InputRequest, InputRequiredResult};

use super::caller::{Acting, Caller};
use super::{CONFIRM_KEY, McpSession, PendingElicitation};
use crate::adapter::ToolCall;

impl McpSession {
    /// Remembers the round of `call` asking about `confirmation_id` under
    /// `state` (a fresh secret only the caller receives), and asks the
    /// client `ask`. `url_mode`: the client's answer only says whether its
    /// person opened the approval page.
    pub(super) async fn ask_round(
        &self,
        acting: &Acting,
        call: &ToolCall,
        confirmation_id: &str,
        state: String,
        ask: ElicitRequest,
        url_mode: bool,
    ) -> CallToolResponse {
        let shared = if url_mode {
            None
        } else {
            self.shared.registry.shared_store()
        };
        let state = match &shared {
            Some(_) => format!("{state}.{confirmation_id}"),
            None => state,
        };
        // The clock is read before the lock.
        let now = self.shared.registry.now_ms();
        let share = Arc::clone(acting.view.toolset().consumer().principal());
        let per_share = self
            .shared
            .registry
            .limits()
            .max_pending_confirmations_per_consumer
            .max(1);
        let round = PendingElicitation {
            confirmation_id: confirmation_id.to_owned(),
            consumer: acting.consumer.clone(),
            anonymous: acting.caller == Caller::Anonymous,
            tool: call.name().to_owned(),
            arguments: call.arguments().clone(),
            url_mode,
            share: Arc::clone(&share),
        };
        let stored = shared.as_ref().map(|_| Stored {
            state: digest(&state),
            round: round.clone(),
        });
        self.remember(&state, round, &share, per_share, now);
        if let (Some((store, namespace)), Some(stored)) = (shared, stored)
            && let Ok(text) = serde_json::to_string(&stored)
        {
            // Lives while the request is pending (its relay removes it) and
            // no longer than a round here.
            let kept = store
                .put(&namespace.round(confirmation_id), &text, ROUND_TTL)
                .await;
            if let Err(error) = kept {
                tracing::warn!(store = store.name(), %error, "an input-required round was not shared: only this replica takes its answer");
            }
        }
        let requests = BTreeMap::from([(CONFIRM_KEY.to_owned(), InputRequest::Elicitation(ask))]);
        InputRequiredResult::new(Some(requests), Some(state)).into()
    }
}

impl McpSession {
    /// Keeps `round` here under `state`: a principal's rounds beyond its
    /// share push out its own oldest, never another's, so identities in
    /// numbers cannot evict the rounds other parties are answering.
    fn remember(
        &self,
        state: &str,
        round: PendingElicitation,
        share: &Arc<str>,
        per_share: usize,
        now: u64,
    ) {
        let mut rounds = self
            .shared
            .elicitations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (oldest, held) = rounds.oldest_matching(|kept| kept.share == *share);
        if held >= per_share
            && let Some(oldest) = oldest
        {
            rounds.remove(&oldest);
        }
        rounds.insert(state.to_owned(), round, now);
    }
}

/// How long a round is kept (here and in a shared store).
pub(super) const ROUND_TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// A round as a shared store keeps it: the digest of its secret state, and
/// the round.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    state: String,
    round: PendingElicitation,
}

/// The digest of a round's state (the store never holds the secret).
fn digest(state: &str) -> String {
    crate::canonical::Sha256Digest::of(&serde_json::Value::String(state.to_owned())).to_string()
}

impl McpSession {
    /// The round `state` names, kept by another replica in the shared
    /// store (read, not taken: [`take_shared_round`](Self::take_shared_round)
    /// once the answer is found to match it).
    pub(super) async fn shared_round(&self, state: &str) -> Option<PendingElicitation> {
        let (store, namespace) = self.shared.registry.shared_store()?;
        let (_, confirmation_id) = state.rsplit_once('.')?;
        let key = namespace.round(confirmation_id);
        let text = store.get(&key).await.ok()??;
        let stored = serde_json::from_str::<Stored>(&text).ok()?;
        if stored.state != digest(state) || stored.round.confirmation_id != confirmation_id {
            return None;
        }
        Some(stored.round)
    }

    /// Takes the round `state` names from the shared store (a state
    /// answers once).
    pub(super) async fn take_shared_round(&self, state: &str) {
        let Some((store, namespace)) = self.shared.registry.shared_store() else {
            return;
        };
        if let Some((_, confirmation_id)) = state.rsplit_once('.') {
            let _ = store.remove(&namespace.round(confirmation_id)).await;
        }
    }
}
