//! Appends events to a run's history, stamped with simulated time.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::model::{Actor, Event, EventKind};

/// The run's own clock, as the recorder stamps events with it (the
/// simulator's [`SimClock`](super::SimClock) in a run).
pub(crate) trait RunClock: std::fmt::Debug + Send + Sync {
    /// Milliseconds since the run started.
    fn now_ms(&self) -> i64;
    /// The simulated instant at which it reads `at_ms`.
    fn instant_at(&self, at_ms: i64) -> madsim::time::Instant;
}

/// The shared event log of one run. Simulated nodes all live in one process,
/// so they append to it directly; the order of appends is the history order.
#[derive(Debug)]
pub(crate) struct Recorder {
    clock: Box<dyn RunClock>,
    /// Off for benchmarks of the bare simulation: nothing is kept.
    enabled: bool,
    events: Mutex<Vec<Event>>,
    /// Set when a replica's spin or panic stopped the run: its event is
    /// the history's last, and no worker future is polled again.
    stopped: AtomicBool,
}

impl Recorder {
    pub fn new(clock: impl RunClock + 'static, enabled: bool) -> Self {
        Self {
            clock: Box::new(clock),
            enabled,
            events: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The simulated instant at which the run's clock reads `at_ms`.
    pub fn instant_at(&self, at_ms: i64) -> madsim::time::Instant {
        self.clock.instant_at(at_ms)
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Ends the history here: a replica spun or panicked.
    pub fn stop_run(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    pub fn run_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    pub fn record(&self, actor: Actor, term: u32, kind: EventKind) {
        if !self.enabled || self.run_stopped() {
            return;
        }
        let event = Event {
            at_ms: self.now_ms(),
            actor,
            term,
            kind,
        };
        self.events.lock().expect("recorder lock").push(event);
    }

    /// Reads the events recorded so far.
    pub fn read<T>(&self, read: impl FnOnce(&[Event]) -> T) -> T {
        read(&self.events.lock().expect("recorder lock"))
    }

    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.events.lock().expect("recorder lock"))
    }
}
