//! Time as runtime state keeps it: milliseconds since the Unix epoch. An
//! `Instant` means nothing outside the process that took it; a deadline kept in
//! unix milliseconds (an open breaker's cooldown, a throttle) means the same in
//! every instance that shares the state.

use std::ops::{Add, Sub};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UnixMs(pub u64);

impl UnixMs {
    /// The wall clock now (0 if it is set before 1970).
    pub fn now() -> Self {
        let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        UnixMs(u64::try_from(ms).unwrap_or(u64::MAX))
    }

    /// How long after `earlier` this is; zero if it is not after it.
    pub fn since(self, earlier: UnixMs) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

/// Nanoseconds since the Unix epoch, as trace spans time themselves (0 if the
/// clock is set before 1970).
pub fn unix_nanos() -> u64 {
    let ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    u64::try_from(ns).unwrap_or(u64::MAX)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Saturating: an absurd duration gives the far future, never an overflow.
impl Add<Duration> for UnixMs {
    type Output = UnixMs;
    fn add(self, d: Duration) -> UnixMs {
        UnixMs(self.0.saturating_add(millis(d)))
    }
}

impl Sub<Duration> for UnixMs {
    type Output = UnixMs;
    fn sub(self, d: Duration) -> UnixMs {
        UnixMs(self.0.saturating_sub(millis(d)))
    }
}

/// A fresh 64-bit value no other instance will make: for breaker epochs and probe
/// tokens, which several instances sharing state must never confuse. The system's
/// random source, else (it failed) the time mixed with a process counter.
pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static FALLBACK: AtomicU64 = AtomicU64::new(0);
    getrandom::u64().unwrap_or_else(|_| {
        let n = FALLBACK.fetch_add(1, Ordering::Relaxed);
        crate::util::fnv1a(&[UnixMs::now().0.to_le_bytes(), n.to_le_bytes()].concat())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_measures() {
        let t = UnixMs(1_000);
        assert_eq!(t + Duration::from_secs(2), UnixMs(3_000));
        assert_eq!(t - Duration::from_secs(2), UnixMs(0));
        assert_eq!(UnixMs(u64::MAX) + Duration::from_secs(1), UnixMs(u64::MAX));
        assert_eq!(UnixMs(3_500).since(t), Duration::from_millis(2_500));
        assert_eq!(t.since(UnixMs(3_500)), Duration::ZERO);
        assert!(UnixMs::now() > UnixMs(1_700_000_000_000));
        assert_ne!(unique(), unique());
    }
}
