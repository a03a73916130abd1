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

/// What the waiting call does next, decided here for every adapter.
pub(crate) enum Then {
    /// Run again with the evidence (the pipeline reports approved, denied,
    /// expired or withdrawn); `Some(approved)` when the client's own asking
    /// answered, which the adapter records first.
    Retry(Option<bool>),
    /// End `CANCELLED` alone, recording nothing: another call still waits
    /// on the same request, or (`agent_left`) its consumer was forgotten
    /// and nothing may be kept that its identity could replay or conflict
    /// with.
    EndAlone {
        /// Its consumer was forgotten while it waited.
        agent_left: bool,
    },
    /// Nobody waits any more: settle the agent's own request `CANCELLED`
    /// through the pipeline (audited, kept for its invocation id).
    SettleCancelled,
}

/// Waits for the person to answer `confirmation_id` for `consumer`: until
/// `ask` (the client's own asking; [`std::future::pending`] when the
/// person answers only in the application) resolves, the request ends, or
/// `interrupted` fires. If the returned future is dropped while waiting
/// and nobody else waits on the request, `settle_abandoned` runs (it
/// settles the call `CANCELLED` there and then) — unless the request was
/// withdrawn because its consumer was forgotten.
pub(crate) async fn for_the_person(
    registry: &Registry,
    consumer: &Consumer,
    confirmation_id: &str,
    ask: impl Future<Output = bool>,
    interrupted: impl Future<Output = ()>,
    settle_abandoned: impl FnOnce() + Send + 'static,
) -> Then {
    let abandoned = {
        let (registry, id) = (registry.clone(), confirmation_id.to_owned());
        move |withdrawal: Withdrawal| {
            if withdrawal != Withdrawal::Awaited && !agent_left(&registry, &id) {
                settle_abandoned();
            }
        }
    };
    let mut waiting = registry
        .confirmations()
        .wait_guard(confirmation_id, consumer, abandoned);
    let asked = tokio::select! {
        approved = ask => Some(approved),
        _ = waiting.outcome() => None,
        () = interrupted => {
            let withdrawal = waiting.cancel();
            return if agent_left(registry, confirmation_id) {
                Then::EndAlone { agent_left: true }
            } else if withdrawal == Withdrawal::Awaited {
                Then::EndAlone { agent_left: false }
            } else {
                Then::SettleCancelled
            };
        }
    };
    // The wait is over; nothing is withdrawn.
    waiting.finish();
    match asked {
        Some(approved) => Then::Retry(Some(approved)),
        None if agent_left(registry, confirmation_id) => Then::EndAlone { agent_left: true },
        None => Then::Retry(None),
    }
}

/// Whether `confirmation_id` was withdrawn because its consumer was
/// forgotten ([`AGENT_LEFT`](crate::confirmation::AGENT_LEFT)).
fn agent_left(registry: &Registry, confirmation_id: &str) -> bool {
    registry
        .confirmations()
        .resolution(confirmation_id)
        .is_some_and(|resolution| resolution.reason == Some(crate::confirmation::AGENT_LEFT))
}
