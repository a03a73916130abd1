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
    // 20 000 other pairs arrive (twice the table) while the hot consumer
    // waits: its drained bucket is the least recently used, yet it is never
    // forgotten — a full table refuses newcomers until a bucket refills
    // rather than reset anyone's limit.
    let mut refused = 0;
    for n in 0..20_000 {
        let other = Consumer::new(ConsumerKind::Test, format!("c{n}"));
        match take(&chain, &other, &clock).await {
            None => {}
            Some(ErrorCode::RateLimited) => refused += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(refused, 10_001, "10 000 places, one of them the hot pair's");
    assert_eq!(
        take(&chain, &hot, &clock).await,
        Some(ErrorCode::RateLimited)
    );
    // The window refills it as documented: one token per 30 s.
    clock.advance(Duration::from_secs(30));
    assert_eq!(take(&chain, &hot, &clock).await, None);
    // Once buckets have refilled, newcomers take their places again.
    clock.advance(Duration::from_secs(60));
    let late = Consumer::new(ConsumerKind::Test, "late");
    assert_eq!(take(&chain, &late, &clock).await, None);
    assert_eq!(take(&chain, &hot, &clock).await, None);
}
