//! Durations as whole milliseconds, saturating at `u64::MAX` (a duration
//! too long for the wire is as good as forever).

use std::time::Duration;

/// `duration` in whole milliseconds, `u64::MAX` when it does not fit.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_milliseconds_saturating() {
        assert_eq!(millis(Duration::from_micros(1_999)), 1);
        assert_eq!(millis(Duration::from_secs(3)), 3_000);
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }
}
