//! The worker's clock on madsim's simulated time, split as production's
//! is: a wall clock (`now_ms`, `SystemTime`) that can be skewed and
//! stepped, and a monotonic clock (`sleep_ms`, tokio's timers) that steps
//! never touch; a rate (a bad clocksource, a slewing NTP) drives both.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use retention_worker::Clock;
use tokio::sync::Notify;

use super::recorder::RunClock;
use super::spin::{Liveness, SpinMeter};

/// Rates are thousandths: 1000 keeps time, 500 runs at half speed.
pub const RATE_PERMILLE_TRUE: u64 = 1_000;

/// Milliseconds since the runtime started as one host reads them: shifted
/// by a skew and any steps, and running at the host's rate. Clones share
/// the host's clock. Only meaningful inside a madsim runtime.
#[derive(Debug, Clone)]
pub struct SimClock {
    origin: madsim::time::Instant,
    host: Arc<Host>,
    /// Who counts this clock's readings and timers as steps (LIVE-3).
    meter: Meter,
}

/// Where a clock's readings and timers count as steps.
#[derive(Debug, Clone)]
enum Meter {
    /// Nobody's: the run's own clock, the database's.
    None,
    /// A replica's worker reads it: too many steps end the run (LIVE-3).
    Replica(Weak<dyn Liveness>),
    /// A worker run outside [`Sim`](crate::Sim) reads it: too many steps
    /// fail the test with a panic that says so.
    Standalone(Arc<SpinMeter>),
}

#[derive(Debug)]
struct Host {
    readings: Mutex<Readings>,
    /// A rate change: sleepers recompute how long they have left.
    rate_changed: Notify,
}

/// The two clocks, anchored at the last change: each reads its anchor plus
/// the true time since, scaled by the rate. Microseconds, so that a rate
/// loses nothing to rounding between changes.
#[derive(Debug, Clone, Copy)]
struct Readings {
    anchor_true_us: i64,
    wall_us: i64,
    monotonic_us: i64,
    rate_permille: u64,
}

impl Readings {
    fn advanced_to(self, true_us: i64) -> Self {
        let passed_us = scale(true_us - self.anchor_true_us, self.rate_permille);
        Self {
            anchor_true_us: true_us,
            wall_us: self.wall_us.saturating_add(passed_us),
            monotonic_us: self.monotonic_us.saturating_add(passed_us),
            ..self
        }
    }
}

fn scale(true_us: i64, rate_permille: u64) -> i64 {
    let scaled = i128::from(true_us) * i128::from(rate_permille) / 1_000;
    i64::try_from(scaled).unwrap_or(i64::MAX)
}

impl SimClock {
    /// A clock reading 0 now, plus `skew_ms`, keeping true time.
    pub fn new(skew_ms: i64) -> Self {
        Self::at(madsim::time::Instant::now(), skew_ms)
    }

    fn at(origin: madsim::time::Instant, skew_ms: i64) -> Self {
        let readings = Readings {
            anchor_true_us: 0,
            wall_us: skew_ms.saturating_mul(1_000),
            monotonic_us: 0,
            rate_permille: RATE_PERMILLE_TRUE,
        };
        Self {
            origin,
            host: Arc::new(Host {
                readings: Mutex::new(readings),
                rate_changed: Notify::new(),
            }),
            meter: Meter::None,
        }
    }

    /// This clock, as `replica`'s worker reads it: each reading and timer
    /// counts as one of its steps (spin detection).
    pub(crate) fn metered(self, replica: Weak<dyn Liveness>) -> Self {
        Self {
            meter: Meter::Replica(replica),
            ..self
        }
    }

    /// This clock, guarded against a worker that spins on it: for a test
    /// that runs a worker on madsim outside [`Sim`](crate::Sim). More than
    /// [`SPIN_STEPS_MAX`](super::SPIN_STEPS_MAX) readings and timers within
    /// [`SPIN_WINDOW_MS`](super::SPIN_WINDOW_MS) of simulated time panic,
    /// naming the spin, where the test would otherwise hang.
    pub fn spin_guarded(self) -> Self {
        Self {
            meter: Meter::Standalone(Arc::new(SpinMeter::new())),
            ..self
        }
    }

    fn count_step(&self) {
        match &self.meter {
            Meter::None => {}
            Meter::Replica(replica) => {
                if let Some(replica) = replica.upgrade() {
                    replica.step();
                }
            }
            Meter::Standalone(meter) => {
                if let Some(steps) = meter.step() {
                    panic!(
                        "LIVE-3: the worker took {steps} steps (clock readings and timers) \
                         within {} ms of simulated time: it spins without waiting",
                        super::SPIN_WINDOW_MS
                    );
                }
            }
        }
    }

    /// Another host's clock on `self`'s origin, skewed by `skew_ms`.
    pub fn skewed(&self, skew_ms: i64) -> Self {
        Self::at(self.origin, skew_ms)
    }

    fn true_us(&self) -> i64 {
        i64::try_from(self.origin.elapsed().as_micros()).unwrap_or(i64::MAX)
    }

    fn now(&self) -> Readings {
        let readings = *self.host.readings.lock().expect("clock");
        readings.advanced_to(self.true_us())
    }

    /// The simulated instant at which this clock reads `at_ms`, for a clock
    /// that was never stepped and keeps true time (the run's own clock).
    pub fn instant_at(&self, at_ms: i64) -> madsim::time::Instant {
        let readings = *self.host.readings.lock().expect("clock");
        assert_eq!(
            readings.rate_permille, RATE_PERMILLE_TRUE,
            "instant_at is for a clock that keeps true time"
        );
        let since_origin_us = at_ms
            .saturating_mul(1_000)
            .saturating_sub(readings.wall_us - readings.monotonic_us);
        self.origin + Duration::from_micros(u64::try_from(since_origin_us).unwrap_or(0))
    }

    /// Steps the wall clock by `delta_ms` (NTP's step, an operator's
    /// `date -s`): readings jump; timers, on the monotonic clock, do not.
    /// Returns the readings before and after.
    pub fn step(&self, delta_ms: i64) -> (i64, i64) {
        let mut readings = self.host.readings.lock().expect("clock");
        let now = readings.advanced_to(self.true_us());
        let before_ms = now.wall_us.div_euclid(1_000);
        *readings = Readings {
            wall_us: now.wall_us.saturating_add(delta_ms.saturating_mul(1_000)),
            ..now
        };
        (before_ms, readings.wall_us.div_euclid(1_000))
    }

    /// From now on both clocks run at `rate_permille` of true time: its
    /// readings and its timers alike, as a bad clocksource or a slewing NTP
    /// moves both. Returns the wall reading at the change.
    pub fn set_rate(&self, rate_permille: u64) -> i64 {
        assert!(rate_permille > 0, "a clock that stands still never wakes");
        let reading_ms = {
            let mut readings = self.host.readings.lock().expect("clock");
            let now = readings.advanced_to(self.true_us());
            *readings = Readings {
                rate_permille,
                ..now
            };
            now.wall_us.div_euclid(1_000)
        };
        self.host.rate_changed.notify_waiters();
        reading_ms
    }
}

impl RunClock for SimClock {
    fn now_ms(&self) -> i64 {
        Clock::now_ms(self)
    }

    fn instant_at(&self, at_ms: i64) -> madsim::time::Instant {
        SimClock::instant_at(self, at_ms)
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> i64 {
        self.count_step();
        self.now().wall_us.div_euclid(1_000)
    }

    /// Waits until the monotonic clock has advanced `duration_ms`: at the
    /// host's rate, re-planned whenever the rate changes.
    async fn sleep_ms(&self, duration_ms: u64) {
        self.count_step();
        let duration_us = i64::try_from(duration_ms.saturating_mul(1_000)).unwrap_or(i64::MAX);
        let target_us = self.now().monotonic_us.saturating_add(duration_us);
        loop {
            let changed = self.host.rate_changed.notified();
            let now = self.now();
            let left_us = target_us - now.monotonic_us;
            if left_us <= 0 {
                return;
            }
            // True time for what is left, rounded up to the next microsecond.
            let rate = i128::from(now.rate_permille);
            let true_us = (i128::from(left_us) * 1_000 + rate - 1) / rate;
            let true_us = u64::try_from(true_us).unwrap_or(u64::MAX);
            let timer = madsim::time::sleep(Duration::from_micros(true_us));
            futures_util::future::select(std::pin::pin!(timer), std::pin::pin!(changed)).await;
        }
    }
}
