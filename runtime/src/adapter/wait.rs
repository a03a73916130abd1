//! The wait for the person: a call whose first attempt was asked for a
//! confirmation is held open while the person answers, then retried with
//! the evidence. Every adapter's wait is this one — the in-process
//! toolset's wait mode, MCP's elicitation and URL approvals, WebMCP's page
//! dialog — so how a wait ends is decided in one place:
//!
//! - the client's own asking of its person answers (MCP elicitation): the
//!   answer is recorded, then the call retried;
//! - the request ends elsewhere (answered in the application, withdrawn by
//!   an unmount, expired): the retry reports how;
//! - its consumer is forgotten (its session ended): the call ends
//!   `CANCELLED` leaving nothing its identity could replay or conflict with;
//! - nobody waits any more (the caller cancelled, the toolset was
//!   disposed): the person is no longer asked — unless another call waits
//!   on the same request — and the call settles `CANCELLED`;
//! - the waiting future is dropped (its task aborted, the connection
//!   went away): the guard withdraws the request and settles the call
//!   there and then (`abandoned`).

use std::future::Future;

use crate::confirmation::Withdrawal;
use crate::context::Consumer;
use crate::registry::Registry;

/// How a wait for the person ended.
pub(crate) enum Waited {
    /// The client's own asking of its person answered: approved or not.
    Asked(bool),
    /// The request ended elsewhere: the retry reports how.
    Ended,
    /// Its consumer was forgotten while it waited.
    AgentLeft,
    /// Nobody waits any more; how the request was withdrawn.
    Interrupted(Withdrawal),
}

/// Waits for the person to answer `confirmation_id` for `consumer`: until
/// `ask` (the client's own asking; [`std::future::pending`] when the
/// person answers only in the application) resolves, the request ends, or
/// `interrupted` fires. `abandoned` runs if the returned future is dropped
/// while waiting.
pub(crate) async fn for_the_person(
    registry: &Registry,
    consumer: &Consumer,
    confirmation_id: &str,
    ask: impl Future<Output = bool>,
    interrupted: impl Future<Output = ()>,
    abandoned: impl FnOnce(Withdrawal) + Send + 'static,
) -> Waited {
    let mut waiting = registry
        .confirmations()
        .wait_guard(confirmation_id, consumer, abandoned);
    let asked = tokio::select! {
        approved = ask => Some(approved),
        _ = waiting.outcome() => None,
        () = interrupted => return Waited::Interrupted(waiting.cancel()),
    };
    // The wait is over; nothing is withdrawn.
    waiting.finish();
    match asked {
        Some(approved) => Waited::Asked(approved),
        None if agent_left(registry, confirmation_id) => Waited::AgentLeft,
        None => Waited::Ended,
    }
}

/// Whether `confirmation_id` was withdrawn because its consumer was
/// forgotten ([`AGENT_LEFT`](crate::confirmation::AGENT_LEFT)).
pub(crate) fn agent_left(registry: &Registry, confirmation_id: &str) -> bool {
    registry
        .confirmations()
        .resolution(confirmation_id)
        .is_some_and(|resolution| resolution.reason == Some(crate::confirmation::AGENT_LEFT))
}
