//! The injectable clock: every timestamp, TTL and rate-limit refill reads
//! time through a [`Clock`], so tests control time completely. Give a
//! registry a [`ManualClock`] in tests, or your own [`Clock`].
//!
//! The default [`TokioClock`] anchors wall-clock time once and then advances
//! with `tokio::time::Instant`, so under `tokio::time::pause()` it moves
//! exactly when the test advances time. [`ManualClock`] is set by hand.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::util::time::{Instant, SteadyInstant, SystemTime, UNIX_EPOCH};

/// A source of time, in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// Wall time anchored at creation, advancing with tokio's clock (which a
/// paused test runtime controls). Outside a runtime it uses `std::time`.
#[derive(Debug)]
pub struct TokioClock {
    anchor_ms: u64,
    start: SteadyInstant,
    tokio_start: Option<Instant>,
}

impl TokioClock {
    /// A clock reading the current wall time now.
    pub fn new() -> TokioClock {
        let anchor_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(crate::util::millis::millis)
            .unwrap_or(0);
        TokioClock {
            anchor_ms,
            start: SteadyInstant::now(),
            tokio_start: crate::util::time::can_spawn().then(Instant::now),
        }
    }
}

impl TokioClock {
    /// Its reading at tokio instant `at` (a reading taken then), when it
    /// follows tokio's clock; `None` when it follows `std::time` (made
    /// outside a runtime). Saves reading the clock twice for one moment.
    pub(crate) fn ms_at(&self, at: Instant) -> Option<u64> {
        let start = self.tokio_start?;
        Some(self.anchor_ms.saturating_add(crate::util::millis::millis(
            at.saturating_duration_since(start),
        )))
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    fn now_ms(&self) -> u64 {
        let elapsed = match self.tokio_start {
            Some(start) => start.elapsed(),
            None => self.start.elapsed(),
        };
        self.anchor_ms
            .saturating_add(crate::util::millis::millis(elapsed))
    }
}

/// A clock that moves only when told to.
///
/// ```
/// use agent_surface::clock::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::at_ms(1_000);
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(clock.now_ms(), 3_000);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicU64,
}

impl ManualClock {
    /// A clock reading `ms`.
    pub fn at_ms(ms: u64) -> ManualClock {
        ManualClock {
            now_ms: AtomicU64::new(ms),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let ms = crate::util::millis::millis(by);
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set_ms(&self, ms: u64) {
        self.now_ms.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

/// A host clock as the registry reads it: contained (a panicking reading
/// repeats the last good one) and monotonic (a reading earlier than one
/// already seen is clamped to it, so time used for budgets, windows and
/// time-to-live never runs backwards: a clock stepped back stands still
/// until it catches up, and stepping it forward again refills nothing
/// twice).
#[derive(Debug)]
pub(crate) struct Monotonic {
    clock: Arc<dyn Clock>,
    latest: AtomicU64,
}

impl Monotonic {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Monotonic {
        Monotonic {
            clock,
            latest: AtomicU64::new(0),
        }
    }
}

impl Clock for Monotonic {
    fn now_ms(&self) -> u64 {
        match crate::util::contain::contained("clock", || self.clock.now_ms()) {
            Some(now) => self.latest.fetch_max(now, Ordering::AcqRel).max(now),
            None => self.latest.load(Ordering::Acquire),
        }
    }
}

impl<C: Clock> Clock for Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
}

/// Formats epoch milliseconds as an RFC 3339 UTC timestamp
/// (`2026-11-30T09:30:00.000Z`).
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (hour, minute, second) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Civil-from-days (Howard Hinnant's algorithm), for days since 1970-01-01.
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_031_045_123), "2026-11-30T09:30:45.123Z");
    }
}
