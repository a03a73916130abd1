//! The built-in rate limit: a token bucket per (consumer, capability),
//! bounded in memory.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::json;

use super::buckets::Buckets;
use crate::error::ErrorPayload;
use crate::policy::policy_identity::{PolicyIdentity, seal::Token};
use crate::policy::{BoxFuture, Hooks, Next, Policy, PolicyContext, PolicyResult};
use crate::store::Taken;
use crate::util::lru::Lru;

/// (principal, capability id).
type BucketKey = (Arc<str>, Arc<str>);

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    last_ms: u64,
}

impl Bucket {
    /// Refilled up to `now_ms` at `per_ms`, never past `limit`.
    fn refill(&mut self, now_ms: u64, per_ms: f64, limit: f64) {
        #[allow(clippy::cast_precision_loss)]
        let refill = now_ms.saturating_sub(self.last_ms) as f64 * per_ms;
        self.tokens = (self.tokens + refill).min(limit);
        self.last_ms = self.last_ms.max(now_ms);
    }

    /// Takes a token; `Err(retry_after_ms)` when none is left.
    fn take(&mut self, per_ms: f64) -> Result<(), u64> {
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let wait = ((1.0 - self.tokens) / per_ms).ceil() as u64;
            Err(wait.max(1))
        }
    }
}

/// Principal and capability pairs with a bucket of their own, per policy;
/// as many evicted pairs that still owed tokens are remembered by key.
pub const MAX_RATE_LIMIT_BUCKETS: usize = 10_000;

/// Slots the debtors let go of are folded into (64 KiB).
const FORGOTTEN_SLOTS: usize = 8_192;

/// The two slots `key` folds into.
fn slots(key: &BucketKey) -> [usize; 2] {
    use std::hash::BuildHasher;
    let hash = rustc_hash::FxBuildHasher.hash_one(key);
    let slot = |bits: u64| usize::try_from(bits % FORGOTTEN_SLOTS as u64).unwrap_or(0);
    [
        slot(hash),
        slot(hash.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15),
    ]
}

/// The limiter's memory, behind one lock.
#[derive(Debug)]
struct Table {
    buckets: Buckets<BucketKey, Bucket>,
    /// The latest time seen: readings earlier than it are clamped to it,
    /// so a clock stepped back and forward refills nothing twice.
    latest_ms: u64,
    /// Evicted pairs that still owed tokens, by exact key: when each would
    /// be full again. At most [`MAX_RATE_LIMIT_BUCKETS`]; an entry lasts
    /// one window (by then every debt is repaid). Created at the first
    /// eviction.
    debtors: Option<Lru<BucketKey, u64>>,
    /// Debtors let go of (beyond the debtors' bound), folded: each writes
    /// when it would be full again into two slots its key hashes to
    /// (keeping the later time). A pair the limiter does not know starts
    /// owing what the earlier of its two slots says — never less than it
    /// owed if it was let go of; more only when both its slots met other
    /// debtors'. Made at the first debtor let go of.
    forgotten: Option<Box<[u64]>>,
}

/// An advisory token bucket per (principal, capability): `limit` calls per
/// `window`, refilled continuously; a principal's identities share its
/// buckets ([`Consumer::principal`](crate::context::Consumer::principal)).
/// On a registry with a [shared store](crate::store), the bucket is the
/// store's: every replica takes from the same one, on the store's clock.
/// O(1) per call; memory is bounded: at most [`MAX_RATE_LIMIT_BUCKETS`]
/// pairs have a bucket, and as many evicted debtors are remembered.
///
/// **Eviction never refills.** A newcomer is always served a bucket (the
/// least recently used pair gives way); an evicted pair that owed tokens is
/// remembered by its exact key and resumes exactly where it was. Beyond
/// that bound — more than 20,000 pairs that spent within one window — a
/// debtor let go of is folded into a fixed table of 8,192 slots (two per
/// key, the later repayment time kept): a pair the limiter does not know
/// starts owing what its slots say, which is never less than it owed if it
/// was let go of (more only when both its slots met other debtors', for at
/// most one window: failing closed). So draining a bucket and rotating
/// identities, any number of them, never buys a single call: no bucket is
/// refilled by eviction. Time is clamped
/// to the latest reading seen, so a clock that steps back never refills.
#[derive(Debug)]
pub struct RateLimit {
    name: String,
    limit: f64,
    calls: u32,
    window_ms: u64,
    table: Mutex<Table>,
}

/// [`RateLimit`]: at most `limit` calls per `window` per principal and
/// capability.
pub fn rate_limit(limit: u32, window: Duration) -> RateLimit {
    let window_ms = crate::util::millis::millis(window).max(1);
    RateLimit {
        name: format!("rateLimit({limit}/{window_ms}ms)"),
        limit: f64::from(limit.max(1)),
        calls: limit.max(1),
        window_ms,
        table: Mutex::new(Table {
            buckets: Buckets::new(MAX_RATE_LIMIT_BUCKETS),
            latest_ms: 0,
            debtors: None,
            forgotten: None,
        }),
    }
}

impl RateLimit {
    /// Takes a token; `Err(retry_after_ms)` when none is left.
    fn take(&self, principal: &Arc<str>, capability: &Arc<str>, now_ms: u64) -> Result<(), u64> {
        #[allow(clippy::cast_precision_loss)]
        let per_ms = self.limit / self.window_ms as f64;
        let limit = self.limit;
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let now_ms = now_ms.max(table.latest_ms);
        table.latest_ms = now_ms;
        let table = &mut *table;
        let key = (Arc::clone(principal), Arc::clone(capability));
        // A returning debtor resumes its debt; a pair the limiter does not
        // know starts full, or owing what a debtor let go of still owes.
        let newcomer = table.buckets.get(&key).is_none();
        let remembered = match table.debtors.as_mut() {
            Some(debtors) if newcomer => debtors.remove(&key),
            _ => None,
        };
        let unknown = newcomer && remembered.is_none();
        let full_at = remembered.or_else(|| {
            let forgotten = table.forgotten.as_deref().filter(|_| unknown)?;
            slots(&key)
                .map(|slot| forgotten.get(slot).copied().unwrap_or(0))
                .into_iter()
                .min()
        });
        #[allow(clippy::cast_precision_loss)]
        let owed = full_at.map_or(0.0, |full_at| {
            full_at.saturating_sub(now_ms) as f64 * per_ms
        });
        let (bucket, evicted) = table.buckets.entry(key, || Bucket {
            tokens: (limit - owed).clamp(0.0, limit),
            last_ms: now_ms,
        });
        let taken = match bucket {
            Some(bucket) => {
                bucket.refill(now_ms, per_ms, limit);
                bucket.take(per_ms)
            }
            None => Ok(()),
        };
        if let Some((evicted_key, evicted)) = evicted {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let full_at = evicted
                .last_ms
                .saturating_add(((limit - evicted.tokens).max(0.0) / per_ms).ceil() as u64);
            if full_at > now_ms {
                let window_ms = self.window_ms;
                let let_go = table
                    .debtors
                    .get_or_insert_with(|| Lru::new(MAX_RATE_LIMIT_BUCKETS, window_ms))
                    .insert(evicted_key, full_at, now_ms);
                if let Some((key, full_at)) = let_go {
                    let forgotten = table
                        .forgotten
                        .get_or_insert_with(|| vec![0; FORGOTTEN_SLOTS].into_boxed_slice());
                    for slot in slots(&key) {
                        if let Some(at) = forgotten.get_mut(slot) {
                            *at = (*at).max(full_at);
                        }
                    }
                }
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
        if let Some(shared) = ctx.shared {
            // Replicas count in one bucket, on the store's clock.
            return Box::pin(async move {
                let key = shared.namespace.bucket(
                    &self.name,
                    ctx.consumer().principal(),
                    ctx.capability_id().as_str(),
                );
                let window = Duration::from_millis(self.window_ms);
                match shared.store.take(&key, self.calls, window).await {
                    Ok(Taken::Allowed) => next.run().await,
                    Ok(Taken::Refused { retry_after_ms }) => Err(ErrorPayload::rate_limited(
                        crate::error::RateLimitReason::Rate,
                        Some(retry_after_ms),
                    )),
                    Err(error) => {
                        tracing::warn!(store = shared.store.name(), %error, "the shared store failed: the call did not run");
                        Err(ErrorPayload::store_unavailable())
                    }
                }
            });
        }
        match self.take(
            ctx.consumer().principal(),
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
