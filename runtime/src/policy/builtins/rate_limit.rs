//! The built-in rate limit: a token bucket per (consumer, capability),
//! bounded in memory.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::json;

use super::buckets::Buckets;
use crate::error::ErrorPayload;
use crate::policy::policy_identity::{PolicyIdentity, seal::Token};
use crate::policy::{BoxFuture, Hooks, Next, Policy, PolicyContext, PolicyResult};
use crate::util::lru::Lru;

/// (consumer key, capability id).
type BucketKey = (Arc<str>, Arc<str>);

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    last_ms: u64,
}

/// Buckets kept per policy: beyond it the least recently used pair is
/// evicted, and what it still owed is remembered among the debtors.
const MAX_BUCKETS: usize = 10_000;

/// The limiter's memory, behind one lock.
#[derive(Debug)]
struct Table {
    buckets: Buckets<BucketKey, Bucket>,
    /// The latest time seen: readings earlier than it are clamped to it,
    /// so a clock stepped back and forward refills nothing twice.
    latest_ms: u64,
    /// Evicted pairs that still owed tokens, by exact key: when each would
    /// be full again. At most [`MAX_BUCKETS`]; an entry lasts one window
    /// (by then every debt is repaid). Created at the first eviction.
    debtors: Option<Lru<BucketKey, u64>>,
}

/// An advisory token bucket per (consumer, capability): `limit` calls per
/// `window`, refilled continuously. O(1) per call. Memory is bounded: at
/// most 10,000 pairs with buckets, and as many evicted debtors. A newcomer
/// is always served (the least recently used pair is evicted for it); an
/// evicted pair that owed tokens is remembered by its exact key, so when it
/// returns it resumes exactly where it was — unless 10,000 other debtors
/// were evicted after it, by which time 20,000 other pairs each had a
/// bucket of their own. Time is clamped to the latest reading seen, so a
/// clock that steps back never refills.
#[derive(Debug)]
pub struct RateLimit {
    name: String,
    limit: f64,
    calls: u32,
    window_ms: u64,
    table: Mutex<Table>,
}

/// [`RateLimit`]: at most `limit` calls per `window` per consumer and capability.
pub fn rate_limit(limit: u32, window: Duration) -> RateLimit {
    let window_ms = crate::util::millis::millis(window).max(1);
    RateLimit {
        name: format!("rateLimit({limit}/{window_ms}ms)"),
        limit: f64::from(limit.max(1)),
        calls: limit.max(1),
        window_ms,
        table: Mutex::new(Table {
            buckets: Buckets::new(MAX_BUCKETS),
            latest_ms: 0,
            debtors: None,
        }),
    }
}

impl RateLimit {
    /// Takes a token; `Err(retry_after_ms)` when none is left.
    fn take(&self, consumer: &Arc<str>, capability: &Arc<str>, now_ms: u64) -> Result<(), u64> {
        #[allow(clippy::cast_precision_loss)]
        let per_ms = self.limit / self.window_ms as f64;
        let limit = self.limit;
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let now_ms = now_ms.max(table.latest_ms);
        table.latest_ms = now_ms;
        let key = (Arc::clone(consumer), Arc::clone(capability));
        // A returning debtor resumes its debt; a newcomer starts full.
        let table = &mut *table;
        let newcomer = table.buckets.get(&key).is_none();
        let full_at = match table.debtors.as_mut() {
            Some(debtors) if newcomer => debtors.remove(&key),
            _ => None,
        };
        #[allow(clippy::cast_precision_loss)]
        let owed = full_at.map_or(0.0, |full_at| {
            full_at.saturating_sub(now_ms) as f64 * per_ms
        });
        let fresh = || Bucket {
            tokens: (limit - owed).clamp(0.0, limit),
            last_ms: now_ms,
        };
        let (bucket, evicted) = table.buckets.entry(key, fresh);
        let Some(bucket) = bucket else {
            return Ok(());
        };
        #[allow(clippy::cast_precision_loss)]
        let refill = now_ms.saturating_sub(bucket.last_ms) as f64 * per_ms;
        bucket.tokens = (bucket.tokens + refill).min(limit);
        bucket.last_ms = bucket.last_ms.max(now_ms);
        let taken = if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let wait = ((1.0 - bucket.tokens) / per_ms).ceil() as u64;
            Err(wait.max(1))
        };
        if let Some((evicted_key, evicted)) = evicted {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let full_at = evicted
                .last_ms
                .saturating_add(((limit - evicted.tokens).max(0.0) / per_ms).ceil() as u64);
            if full_at > now_ms {
                let window_ms = self.window_ms;
                let _forgotten = table
                    .debtors
                    .get_or_insert_with(|| Lru::new(MAX_BUCKETS, window_ms))
                    .insert(evicted_key, full_at, now_ms);
            }
        }
        taken
    }
}

impl Policy for RateLimit {
    fn name(&self) -> &str {
        &self.name
    }
    fn __identity(&self, _: Token) -> PolicyIdentity {
        let parameters = json!({ "limit": self.calls, "windowMs": self.window_ms });
        PolicyIdentity::builtin("rateLimit", &self.name, parameters)
    }
    fn hooks(&self) -> Hooks {
        Hooks {
            discovery: false,
            authorize: true,
            invoke: false,
        }
    }
    fn on_authorize<'a>(
        &'a self,
        ctx: &'a PolicyContext<'a>,
        next: Next<'a, PolicyContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        match self.take(
            ctx.consumer().key(),
            ctx.capability_id().as_arc(),
            ctx.now_ms(),
        ) {
            Ok(()) => next.run(),
            Err(retry_after_ms) => Box::pin(std::future::ready(Err(ErrorPayload::rate_limited(
                crate::error::RateLimitReason::Rate,
                Some(retry_after_ms),
            )))),
        }
    }
}
