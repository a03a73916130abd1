//! An input-required round (2026-07-28): the record a round's state names,
//! kept here, and the result that asks the client.

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
    pub(super) fn ask_round(
        &self,
        acting: &Acting,
        call: &ToolCall,
        confirmation_id: &str,
        state: String,
        ask: ElicitRequest,
        url_mode: bool,
    ) -> CallToolResponse {
        // The clock is read before the lock.
        let now = self.shared.registry.now_ms();
        let share = Arc::clone(acting.view.toolset().consumer().principal());
        let per_share = self
            .shared
            .registry
            .limits()
            .max_pending_confirmations_per_consumer
            .max(1);
        let mut rounds = self
            .shared
            .elicitations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A principal's rounds beyond its share push out its own oldest,
        // never another's: identities in numbers cannot evict the rounds
        // other parties are answering.
        let (oldest, held) = rounds.oldest_matching(|round| round.share == share);
        if held >= per_share
            && let Some(oldest) = oldest
        {
            rounds.remove(&oldest);
        }
        rounds.insert(
            state.clone(),
            PendingElicitation {
                confirmation_id: confirmation_id.to_owned(),
                consumer: acting.consumer.clone(),
                anonymous: acting.caller == Caller::Anonymous,
                tool: call.name().to_owned(),
                arguments: call.arguments().clone(),
                url_mode,
                share,
            },
            now,
        );
        drop(rounds);
        let requests = BTreeMap::from([(CONFIRM_KEY.to_owned(), InputRequest::Elicitation(ask))]);
        InputRequiredResult::new(Some(requests), Some(state)).into()
    }
}
