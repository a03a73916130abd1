//! `rate_limit` keeps limiting however many (consumer, capability) pairs it
//! has seen (AS-POLICY-004).

use std::sync::Arc;
use std::time::Duration;

use agent_surface::Kind;
use agent_surface::clock::ManualClock;
use agent_surface::ids::CapabilityId;
use agent_surface::policy::{self, PolicyContext, PolicyRef, rate_limit};
use agent_surface::prelude::*;

/// One call of `consumer` through the authorization onion: its error code.
async fn take(chain: &[PolicyRef], consumer: &Consumer, clock: &ManualClock) -> Option<ErrorCode> {
    let id: CapabilityId = "view:test.probe.poke".parse().unwrap();
    let host = HostContext::new();
    let ctx = PolicyContext::new(
        &id,
        Kind::Action,
        Effect::LocalState,
        consumer,
        &host,
        clock,
    );
    policy::run_authorize(chain, &ctx)
        .await
        .err()
        .map(|error| error.code())
}

#[tokio::test]
async fn as_policy_004_rate_limit_still_limits_a_hot_consumer_once_its_table_is_full() {
    let clock = ManualClock::at_ms(0);
    let chain: Vec<PolicyRef> = vec![Arc::new(rate_limit(2, Duration::from_secs(60)))];
    let hot = Consumer::new(ConsumerKind::Test, "hot");
    assert_eq!(take(&chain, &hot, &clock).await, None);
    assert_eq!(take(&chain, &hot, &clock).await, None);
    assert_eq!(
        take(&chain, &hot, &clock).await,
        Some(ErrorCode::RateLimited)
    );
    // 9 000 other pairs arrive while the hot consumer waits, then it is
    // evicted by more: every newcomer's first call is served (the least
    // recently used pair is evicted), and the hot pair, evicted, is not
    // forgotten: its exact debt is kept, so it returns exactly where it was
    // — never with a bucket it did not earn.
    for n in 0..15_000 {
        let other = Consumer::new(ConsumerKind::Test, format!("c{n}"));
        assert_eq!(take(&chain, &other, &clock).await, None, "newcomer {n}");
    }
    assert_eq!(
        take(&chain, &hot, &clock).await,
        Some(ErrorCode::RateLimited),
        "its debt came back with it"
    );
    // The window refills it as documented: one token per 30 s.
    clock.advance(Duration::from_secs(30));
    assert_eq!(take(&chain, &hot, &clock).await, None);
    assert_eq!(
        take(&chain, &hot, &clock).await,
        Some(ErrorCode::RateLimited)
    );
}
