//! Appends events to a run's history, stamped with simulated time.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use std::sync::atomic::AtomicU64;

use rand::Rng;

use crate::db::DbView;
use crate::model::{Actor, Branch, Event, EventKind};

/// The run's own clock, as the recorder stamps events with it (the
/// simulator's [`SimClock`](super::SimClock) in a run).
pub(crate) trait RunClock: std::fmt::Debug + Send + Sync {
    /// Milliseconds since the run started.
    fn now_ms(&self) -> i64;
    /// The simulated instant at which it reads `at_ms`.
    fn instant_at(&self, at_ms: i64) -> madsim::time::Instant;
}

/// Where `sim replay --at` reads the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Just after the history's event with this sequence number.
    AfterEvent(usize),
    /// At this instant of the run's time (before anything at that very
    /// instant is applied).
    AtMs(i64),
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
    /// `sim replay --at`: the database is read as it stands at this moment,
    /// by the first look at it that follows (nothing else runs in between,
    /// so nothing changes it), and kept here.
    capture_at: Option<Moment>,
    captured: Mutex<Option<DbView>>,
    capture_taken: AtomicBool,
    /// `sim explain`'s branch, and its salt once the run has reached it
    /// (0 before; a salt of 0 is stored as 1).
    branch: Option<Branch>,
    branch_salt: AtomicU64,
}

impl Recorder {
    pub fn new(clock: impl RunClock + 'static, enabled: bool) -> Self {
        Self {
            clock: Box::new(clock),
            enabled,
            events: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            capture_at: None,
            captured: Mutex::new(None),
            capture_taken: AtomicBool::new(false),
            branch: None,
            branch_salt: AtomicU64::new(0),
        }
    }

    /// Parts the run at `branch` (see [`Branch`]).
    pub fn branching(mut self, branch: Option<Branch>) -> Self {
        self.branch = branch;
        self
    }

    /// The branch the run takes, if any.
    pub fn branch(&self) -> Option<&Branch> {
        self.branch.as_ref()
    }

    /// The branch's salt once the run has reached it: each stream of
    /// randomness stirs itself with it at its next draw.
    pub fn branch_salt(&self) -> Option<u64> {
        match self.branch_salt.load(Ordering::Relaxed) {
            0 => None,
            salt => Some(salt),
        }
    }

    /// At the branch's first event: the simulator's own generator is moved
    /// on by a salt-given number of draws (madsim has no reseed), which
    /// changes every later choice it makes, and the other streams are told.
    fn reach_branch(&self, at_ms: i64) {
        let Some(branch) = &self.branch else {
            return;
        };
        if self.branch_salt().is_some() || at_ms < i64::try_from(branch.at_ms).unwrap_or(i64::MAX) {
            return;
        }
        self.branch_salt
            .store(branch.salt.max(1), Ordering::Relaxed);
        let mut rng = madsim::rand::thread_rng();
        for _ in 0..=branch.salt % 1_024 {
            let _: u64 = rng.r#gen();
        }
    }

    /// Has the database read at `moment` (see [`Recorder::capture_due`]).
    pub fn capturing(mut self, moment: Option<Moment>) -> Self {
        self.capture_at = moment;
        self
    }

    /// Whether the database, about to be looked at, should be read for the
    /// capture, and as of which instant: once the moment has passed (the
    /// event is recorded, or the time reached), until the capture is taken.
    pub fn capture_due(&self) -> Option<i64> {
        let moment = self.capture_at?;
        if self.capture_taken.load(Ordering::Relaxed) {
            return None;
        }
        match moment {
            Moment::AfterEvent(seq) => self.read(|events| events.get(seq).map(|e| e.at_ms)),
            Moment::AtMs(at_ms) => (self.now_ms() >= at_ms).then_some(at_ms),
        }
    }

    /// Keeps the capture.
    pub fn store_capture(&self, view: DbView) {
        self.capture_taken.store(true, Ordering::Relaxed);
        *self.captured.lock().expect("capture lock") = Some(view);
    }

    /// The capture, once taken.
    pub fn take_capture(&self) -> Option<DbView> {
        self.captured.lock().expect("capture lock").take()
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
        let at_ms = event.at_ms;
        self.events.lock().expect("recorder lock").push(event);
        self.reach_branch(at_ms);
    }

    /// Reads the events recorded so far.
    pub fn read<T>(&self, read: impl FnOnce(&[Event]) -> T) -> T {
        read(&self.events.lock().expect("recorder lock"))
    }

    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.events.lock().expect("recorder lock"))
    }
}
