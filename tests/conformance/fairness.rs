//! Fairness against rotating identities (AS-POLICY-004, AS-CONFIRM-005):
//! an adversary with 10,000 identities against a victim. Shares are
//! counted per principal (`Consumer::with_principal`; the MCP server puts
//! every identity it mints under one, each authenticated subject under its
//! own), and a rate-limit bucket is never refilled by eviction. The test
//! prints the figures the docs state.

use std::sync::Arc;
use std::time::Duration;

use agent_surface::clock::ManualClock;
use agent_surface::policy::rate_limit;
use agent_surface::prelude::*;
use serde_json::json;

use crate::fixtures::{Probe, code};

const ADVERSARY: usize = 10_000;

fn registry(clock: &Arc<ManualClock>) -> Registry {
    Registry::builder()
        .environment(Environment::Test)
        .clock(clock.clone())
        .policy(rate_limit(5, Duration::from_secs(60)))
        .build()
}

fn poke(registry: &Registry, who: Consumer) -> impl Future<Output = InvocationResult> {
    registry.invoke(
        Invocation::new("view:test.probe.poke").input(json!({"ids": ["x"]})),
        InvokeOptions::consumer(who),
    )
}

fn ask(registry: &Registry, who: Consumer, n: usize) -> impl Future<Output = InvocationResult> {
    registry.invoke(
        Invocation::new("view:test.probe.guarded").input(json!({"ids": [format!("x{n}")]})),
        InvokeOptions::consumer(who),
    )
}

/// Identity `n` of the adversary, acting for one principal.
fn sybil(n: usize) -> Consumer {
    Consumer::new(ConsumerKind::Mcp, format!("sybil-{n}")).with_principal("adversary")
}

fn victim() -> Consumer {
    Consumer::new(ConsumerKind::Mcp, "victim")
}

#[tokio::test]
async fn as_policy_004_an_adversary_of_ten_thousand_identities_never_outweighs_a_victim() {
    let clock = Arc::new(ManualClock::at_ms(0));
    let registry = registry(&clock);
    let _mounted = registry.mount(Probe::new()).unwrap();

    // Rate limits: the adversary's identities share its principal's budget.
    let mut adversary_calls = 0;
    let mut victim_calls = 0;
    for minute in 0..3 {
        for n in 0..ADVERSARY {
            if poke(&registry, sybil(n)).await.is_ok() {
                adversary_calls += 1;
            }
            // The victim calls at its own pace, once every 2,000 of theirs.
            if n % 2_000 == 0 {
                let served = poke(&registry, victim()).await;
                assert!(
                    served.is_ok(),
                    "minute {minute}: victim refused: {served:?}"
                );
                victim_calls += 1;
            }
        }
        clock.advance(Duration::from_secs(60));
    }
    assert!(adversary_calls <= 3 * 5 + 5, "{adversary_calls}");

    // Confirmations (no rate limit here): the adversary holds one share of
    // the pending list, however many identities ask.
    let registry = Registry::builder()
        .environment(Environment::Test)
        .clock(clock.clone())
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let limits = registry.limits();
    let mut adversary_pending = 0;
    for n in 0..ADVERSARY {
        if code(&ask(&registry, sybil(n), n).await) == Some(ErrorCode::ConfirmationRequired) {
            adversary_pending += 1;
        }
    }
    let held = |who: &str| {
        registry
            .confirmations()
            .pending()
            .iter()
            .filter(|p| p.consumer_key.contains(who))
            .count()
    };
    assert!(held("sybil") <= limits.max_pending_confirmations_per_consumer);
    for n in 0..3 {
        assert_eq!(
            code(&ask(&registry, victim(), n).await),
            Some(ErrorCode::ConfirmationRequired),
            "the victim's request {n}"
        );
    }
    assert_eq!(held("victim"), 3);
    println!(
        "fairness: an adversary of {ADVERSARY} identities under one principal was served \
         {adversary_calls} calls in 3 windows of a 5-per-minute limit and holds {} of {} pending \
         requests ({adversary_pending} of its {ADVERSARY} asks were filed, each displacing its \
         own oldest); the victim was served {victim_calls}/{victim_calls} calls and 3/3 requests",
        held("sybil"),
        limits.max_pending_confirmations
    );
}

#[tokio::test]
async fn as_policy_004_rotating_identities_never_refill_a_drained_bucket() {
    let clock = Arc::new(ManualClock::at_ms(0));
    let registry = registry(&clock);
    let _mounted = registry.mount(Probe::new()).unwrap();
    let drained = || Consumer::new(ConsumerKind::Mcp, "drained");
    for _ in 0..5 {
        assert!(poke(&registry, drained()).await.is_ok());
    }
    assert_eq!(
        code(&poke(&registry, drained()).await),
        Some(ErrorCode::RateLimited)
    );
    // Identities of their own, more than the limiter remembers (buckets
    // and debtors), each spending: the drained one is let go of…
    let mut rotating_served = 0;
    for n in 0..30_000 {
        let rotating = Consumer::new(ConsumerKind::Mcp, format!("rotating-{n}"));
        if poke(&registry, rotating).await.is_ok() {
            rotating_served += 1;
        }
    }
    // …and comes back no richer: not a single call more in the window.
    assert_eq!(
        code(&poke(&registry, drained()).await),
        Some(ErrorCode::RateLimited),
        "eviction refilled a drained bucket"
    );
    // The window repays it as documented.
    clock.advance(Duration::from_secs(60));
    assert!(poke(&registry, drained()).await.is_ok());
    println!(
        "fairness: after 30,000 rotating identities ({rotating_served} served their first call), \
         a drained bucket came back drained"
    );
}
