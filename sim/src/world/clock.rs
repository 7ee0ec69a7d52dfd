//! The worker's clock on madsim's simulated time.

use std::time::Duration;

use retention_worker::Clock;

/// Milliseconds of simulated time since the runtime started, shifted by a
/// per-replica skew. Only meaningful inside a madsim runtime.
#[derive(Debug, Clone, Copy)]
pub struct SimClock {
    origin: madsim::time::Instant,
    skew_ms: i64,
}

impl SimClock {
    /// A clock reading 0 now, plus `skew_ms`.
    pub fn new(skew_ms: i64) -> Self {
        Self {
            origin: madsim::time::Instant::now(),
            skew_ms,
        }
    }

    /// The simulated instant at which this clock reads `at_ms`.
    pub fn instant_at(&self, at_ms: i64) -> madsim::time::Instant {
        let since_origin_ms = u64::try_from(at_ms.saturating_sub(self.skew_ms)).unwrap_or(0);
        self.origin + Duration::from_millis(since_origin_ms)
    }

    /// A clock sharing `self`'s origin with a different skew.
    pub fn skewed(&self, skew_ms: i64) -> Self {
        Self {
            origin: self.origin,
            skew_ms,
        }
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> i64 {
        let elapsed_ms = i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX);
        elapsed_ms.saturating_add(self.skew_ms)
    }

    async fn sleep_ms(&self, duration_ms: u64) {
        madsim::time::sleep(Duration::from_millis(duration_ms)).await;
    }
}
