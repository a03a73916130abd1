//! The person's side of a confirmation, for adapters: the text a client
//! shows its person when it asks on the agent's own connection, and that
//! person's answer, recorded as an agent-connection approval.
//!
//! Only a channel the host trusts ever approves: an adapter calls
//! [`answer_on_connection`] only where its host declared the client's
//! asking human-facing (MCP elicitation, opted in). Such an approval
//! answers only the requests of the connection's own consumer, and audit
//! records it with the channel and the client's name. An adapter whose
//! requests are answered in the application's own dialog (a page's
//! in-browser agent) never calls it: its toolset waits for the person
//! instead (wait mode, on the kit's one wait).

use crate::context::Consumer;
use crate::registry::Registry;

/// The message shown to a person for the pending confirmation
/// `confirmation_id`: the effect, the summary and the exact input, with
/// every bidi, zero-width or control character the agent sent made
/// visible. A generic question if it is no longer pending.
pub fn approval_prompt(registry: &Registry, confirmation_id: &str) -> String {
    match registry.confirmations().find(confirmation_id) {
        Some(pending) => format!(
            "Approve this {} operation?\n{}\nExact input: {}",
            pending.effect.as_str(),
            super::text::escape(&pending.summary),
            pending.display_input()
        ),
        None => "Approve this operation?".to_owned(),
    }
}

/// Records the answer a client's person gave on the agent's own connection
/// (channel `channel`, for example `mcp-elicitation`) to
/// `confirmation_id`, asked by `consumer`; `client` names the client in
/// audit. Returns whether it was recorded: an answer to another
/// consumer's request, or to one no longer pending, is refused and
/// resolves nothing (the retry with the confirmation id reports why).
pub fn answer_on_connection(
    registry: &Registry,
    channel: &str,
    consumer: &Consumer,
    client: &str,
    confirmation_id: &str,
    approved: bool,
) -> bool {
    let confirmations = registry.confirmations();
    let Some(shown) = confirmations.find(confirmation_id).map(|p| p.shown()) else {
        return false;
    };
    let approver = confirmations.connection_approver(channel, consumer, client);
    confirmations.resolve(&shown, approved, &approver).is_ok()
}

/// [`answer_on_connection`] for a request pending on any replica sharing
/// the registry's store: answered here when it is held here, else carried
/// to the replica holding it, which applies it — to `consumer`'s own
/// request alone — and reports its verdict
/// ([`Confirmations::answer_anywhere`](crate::confirmation::Confirmations::answer_anywhere)).
/// For an adapter whose caller's next request may land on another replica
/// (a sessionless MCP client answering an input-required round). Not in
/// a page, which has no replicas.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub async fn answer_on_connection_anywhere(
    registry: &Registry,
    channel: &str,
    consumer: &Consumer,
    client: &str,
    confirmation_id: &str,
    approved: bool,
) -> bool {
    let confirmations = registry.confirmations();
    if confirmations.find(confirmation_id).is_some() {
        return answer_on_connection(
            registry,
            channel,
            consumer,
            client,
            confirmation_id,
            approved,
        );
    }
    let Some(shown) = confirmations
        .find_anywhere(confirmation_id)
        .await
        .map(|p| p.shown())
    else {
        return false;
    };
    let approver = confirmations.connection_approver(channel, consumer, client);
    confirmations
        .answer_anywhere(&shown, approved, &approver, None)
        .await
        .is_ok()
}
