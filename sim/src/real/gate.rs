//! Real-mode faults beyond the shared per-call draws: a process freeze (the
//! gate), the gated clock with its host's steps, and the count of database
//! calls in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use retention_worker::Clock;
use retention_worker::pg::SystemClock;
use tokio::sync::watch;

/// A process freeze: while closed, nothing is sent, no reply is seen and no
/// timer fires; the wall clock runs on.
#[derive(Clone)]
pub struct Gate(watch::Sender<bool>);

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// An open gate.
    pub fn new() -> Self {
        Self(watch::channel(false).0)
    }

    /// Freezes the process.
    pub fn close(&self) {
        self.0.send_replace(true);
    }

    /// Thaws the process.
    pub fn open(&self) {
        self.0.send_replace(false);
    }

    /// Whether `other` is this same gate (one process incarnation).
    pub fn same(&self, other: &Gate) -> bool {
        self.0.same_channel(&other.0)
    }

    /// Waits while the process is frozen.
    pub async fn pass(&self) {
        let mut paused = self.0.subscribe();
        while *paused.borrow_and_update() {
            if paused.changed().await.is_err() {
                return;
            }
        }
    }
}

/// The worker's clock: the wall clock plus its host's steps (the offset,
/// shared across restarts as a host's clock is), with timers, on tokio's
/// monotonic clock, untouched by the steps and frozen by the gate.
#[derive(Clone)]
pub struct GatedClock(pub Gate, pub Arc<AtomicI64>);

impl Clock for GatedClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms() + self.1.load(Ordering::SeqCst)
    }

    async fn sleep_ms(&self, duration_ms: u64) {
        tokio::time::sleep(Duration::from_millis(duration_ms)).await;
        self.0.pass().await;
    }
}

/// Counts database calls still running detached, so the run can wait for
/// their effects before it reads the final table.
#[derive(Default)]
pub struct InFlight(pub AtomicU64);

impl InFlight {
    /// Waits until no database call is in flight.
    pub async fn drained(&self) {
        while self.0.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
