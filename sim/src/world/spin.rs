//! Spin detection (LIVE-3): a replica that keeps working while simulated
//! time stands still is stopped, and the run ends with what it recorded.
//!
//! madsim advances time only between polls (by 50-100 ns each) and when
//! every task waits; a worker that loops without waiting (a wait that
//! returns at once, a loss path that changes nothing) would hold the
//! simulation at one instant forever. Each replica counts its steps (polls
//! of its `serve()` and `stop()` futures, and every reading of its clock,
//! timer and call it starts) in windows of simulated time; too many in one
//! window is a spin. A loop that never yields can only be left by
//! unwinding, so the meter panics with [`SpinDetected`], and [`Sim::run`]
//! turns that into a history ending in a `Spinning` event.
//!
//! [`Sim::run`]: crate::Sim::run

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use std::task::{Context, Poll};
use std::time::Duration;

use super::panics::{SpinDetected, catch_worker_panic};

/// The window of simulated time the steps are counted in.
pub const SPIN_WINDOW_MS: u64 = 10;

/// More steps than this within one window is a spin. A correct replica
/// takes a few dozen at most (a poll per message, a clock reading per
/// decision); a spinning one reaches it within milliseconds of wall time.
pub const SPIN_STEPS_MAX: u64 = 20_000;

/// One replica's step count in the current window of simulated time.
#[derive(Debug)]
pub(crate) struct SpinMeter {
    window: Mutex<Window>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: madsim::time::Instant,
    steps: u64,
}

impl SpinMeter {
    pub fn new() -> Self {
        Self {
            window: Mutex::new(Window {
                start: madsim::time::Instant::now(),
                steps: 0,
            }),
        }
    }

    /// Counts one step: the window's count when it passes the bound.
    pub fn step(&self) -> Option<u64> {
        let now = madsim::time::Instant::now();
        let mut window = self.window.lock().expect("spin window");
        if now.duration_since(window.start) >= Duration::from_millis(SPIN_WINDOW_MS) {
            *window = Window {
                start: now,
                steps: 0,
            };
        }
        window.steps += 1;
        (window.steps > SPIN_STEPS_MAX).then_some(window.steps)
    }
}

/// Ends the run: `replica` spun.
pub(crate) fn stop_the_spin(replica: u32) -> ! {
    super::panics::install_hook();
    std::panic::panic_any(SpinDetected { replica })
}

/// What the spin meter and a metered clock need from a replica: its steps
/// counted, whether the run already ended, and its worker's panic made the
/// run's end.
pub(crate) trait Liveness: Send + Sync {
    /// One step of the replica's work (a poll, a clock reading, a timer, a
    /// call); too many while simulated time stands still end the run.
    fn step(&self);
    /// Whether another replica's spin or panic already ended the run.
    fn run_stopped(&self) -> bool;
    /// The replica's worker panicked with `message`: recorded, and the run
    /// ends (LIVE-4).
    fn panicked(&self, message: String) -> !;
}

/// A future whose every poll is a step of `replica`'s meter.
pub(crate) struct Metered<F> {
    inner: Pin<Box<F>>,
    replica: Arc<dyn Liveness>,
}

impl<F> Metered<F> {
    pub fn new(inner: F, replica: Arc<dyn Liveness>) -> Self {
        Self {
            inner: Box::pin(inner),
            replica,
        }
    }
}

impl<F: Future> Future for Metered<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.replica.run_stopped() {
            // The run ended at another replica's spin or panic; its world is
            // being freed.
            return Poll::Pending;
        }
        self.replica.step();
        let inner = self.inner.as_mut();
        match catch_worker_panic(|| inner.poll(cx)) {
            Ok(poll) => poll,
            Err(message) => self.replica.panicked(message),
        }
    }
}
