//! The worker's clock in production: Unix-epoch milliseconds and tokio
//! timers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::Clock;

/// Wall-clock time in milliseconds since the Unix epoch, the unit the
/// schema's `created_at_ms` and `expires_at_ms` use; sleeps on tokio.
///
/// The lease's expiry is decided by the database's clock; this clock only
/// computes the cutoff and the worker's own expiry guard, so skew between the
/// two is what [`crate::WorkerConfig::expiry_margin_ms`] absorbs.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the system clock is after 1970");
        i64::try_from(since_epoch.as_millis()).expect("milliseconds since 1970 fit in i64")
    }

    async fn sleep_ms(&self, duration_ms: u64) {
        tokio::time::sleep(Duration::from_millis(duration_ms)).await;
    }
}
