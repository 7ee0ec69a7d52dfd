//! Real-mode faults: per-call fault draws, a process freeze (the gate) and
//! the gated clock, and the count of database calls still in flight.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use retention_sim::OpKind;
use retention_worker::Clock;
use retention_worker::pg::SystemClock;
use tokio::sync::watch;

/// The fault knobs, per mille of calls; `enabled` turns them all off for
/// the drain phase.
pub struct Faults {
    pub enabled: AtomicBool,
    pub latency_ms_max: u64,
    pub reject_permille: u32,
    pub ambiguous_permille: u32,
    /// Renewals answered `None` after an operator-style revoke of the lease.
    pub revoke_permille: u32,
    /// Renewal replies held past the next renewal tick.
    pub late_renewal_permille: u32,
}

/// What one call meets.
pub struct Drawn {
    pub request_delay_ms: u64,
    pub reply_delay_ms: u64,
    pub reject: bool,
    pub ambiguous: bool,
    pub revoke: bool,
}

impl Faults {
    /// This call's faults. Every call draws the same numbers whether or not
    /// faults are enabled, so the drain phase leaves the sequence in place.
    pub fn draw(&self, rng: &mut ChaCha8Rng, op: OpKind) -> Drawn {
        let f = self;
        let rolls: [u32; 4] = std::array::from_fn(|_| rng.gen_range(0..1_000));
        let delays: [u64; 3] = std::array::from_fn(|_| rng.gen_range(0..=f.latency_ms_max));
        let late = rng.gen_range(0..600);
        if !f.enabled.load(Ordering::SeqCst) {
            return Drawn {
                request_delay_ms: 0,
                reply_delay_ms: 0,
                reject: false,
                ambiguous: false,
                revoke: false,
            };
        }
        let late_renewal = op == OpKind::Renew && rolls[3] < f.late_renewal_permille;
        let reject = rolls[0] < f.reject_permille;
        Drawn {
            request_delay_ms: delays[0],
            reply_delay_ms: delays[1] + if late_renewal { 400 + late } else { 0 },
            reject,
            ambiguous: !reject && rolls[1] < f.ambiguous_permille,
            revoke: op == OpKind::Renew && !reject && rolls[2] < f.revoke_permille,
        }
    }
}

/// A process freeze: while closed, nothing is sent, no reply is seen and no
/// timer fires; the wall clock runs on.
#[derive(Clone)]
pub struct Gate(watch::Sender<bool>);

impl Gate {
    pub fn new() -> Self {
        Self(watch::channel(false).0)
    }

    pub fn close(&self) {
        self.0.send_replace(true);
    }

    pub fn open(&self) {
        self.0.send_replace(false);
    }

    /// Whether `other` is this same gate (one process incarnation).
    pub fn same(&self, other: &Gate) -> bool {
        self.0.same_channel(&other.0)
    }

    pub async fn pass(&self) {
        let mut paused = self.0.subscribe();
        while *paused.borrow_and_update() {
            if paused.changed().await.is_err() {
                return;
            }
        }
    }
}

/// The worker's clock: the wall clock, with timers frozen by the gate.
#[derive(Clone)]
pub struct GatedClock(pub Gate);

impl Clock for GatedClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms()
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
    pub async fn drained(&self) {
        while self.0.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
