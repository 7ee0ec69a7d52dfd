//! LIVE-3: a worker that spins while simulated time stands still is
//! stopped within a bounded number of steps, reported with its last events
//! and a replay command, and the same seed stops it the same way again.
//! LIVE-4: a worker that panics ends the run the same way, with the panic's
//! message and place, instead of ending the process.

use std::sync::{Arc, Mutex, Weak};

use retention_sim::model::{EventKind, FaultEvent, History, RunSpec};
use retention_sim::world::{
    BoxFuture, OnTerm, SPIN_STEPS_MAX, SimDeps, SimulatedWorker, WorkerFactory,
};
use retention_sim::{Sim, Verdict, check, format_failure};
use retention_worker::{Clock, SeededJitter, WorkerConfig};

/// How each kind of spinning worker loops.
#[derive(Clone, Copy)]
enum Spin {
    /// Reads its clock in a loop that never awaits: one poll, forever.
    ReadsTheClock,
    /// Yields in a loop: always ready again, so time never has to pass.
    Yields,
    /// Serves normally, but its `stop()` loops on the clock.
    InStop,
    /// Breaks an assertion of its own once simulated time has passed.
    Panics,
    /// Serves normally, but its `stop()` unwraps a `None`.
    PanicsInStop,
}

struct Spinner {
    spin: Spin,
    deps: SimDeps,
}

struct Factory {
    spin: Spin,
    /// Every worker built, to see that a run frees them however it ends.
    built: Mutex<Vec<Weak<Spinner>>>,
}

impl WorkerFactory for Factory {
    fn build(&self, _: String, _: WorkerConfig, deps: SimDeps) -> Arc<dyn SimulatedWorker> {
        let worker = Arc::new(Spinner {
            spin: self.spin,
            deps,
        });
        self.built.lock().unwrap().push(Arc::downgrade(&worker));
        worker
    }
}

/// Ready on the second poll, waking itself: a task that yields.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

impl SimulatedWorker for Spinner {
    fn serve<'a>(&'a self, _: SeededJitter, _: OnTerm<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            match self.spin {
                Spin::ReadsTheClock => {
                    // Waits for a deadline by reading the clock, never sleeping.
                    let deadline_ms = self.deps.clock.now_ms() + 1_000;
                    while self.deps.clock.now_ms() < deadline_ms {}
                }
                Spin::Yields => loop {
                    YieldOnce(false).await;
                },
                Spin::InStop | Spin::PanicsInStop => self.deps.clock.sleep_ms(u64::MAX / 4).await,
                Spin::Panics => {
                    self.deps.clock.sleep_ms(250).await;
                    let rows_left: u32 = 3;
                    assert!(
                        rows_left == 0,
                        "a term ended with {rows_left} rows unaccounted"
                    );
                }
            }
        })
    }

    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            match self.spin {
                Spin::InStop => {
                    let deadline_ms = self.deps.clock.now_ms() + 1_000;
                    while self.deps.clock.now_ms() < deadline_ms {}
                }
                Spin::PanicsInStop => {
                    let lease: Option<u64> = std::hint::black_box(None);
                    lease.expect("stop() found no lease to release");
                }
                _ => {}
            }
        })
    }
}

fn run(spin: Spin) -> History {
    let factory = Arc::new(Factory {
        spin,
        built: Mutex::new(Vec::new()),
    });
    let spec = RunSpec {
        seed: 3,
        replicas: 2,
        duration_ms: 2_000,
        // A stop() at 1 s, for the worker that panics in it.
        events: vec![FaultEvent::Stop {
            replica: 1,
            at_ms: 1_000,
            callers: 1,
        }],
        ..RunSpec::default()
    };
    let history = Sim::new(&spec)
        .factory(factory.clone())
        .run()
        .expect("a valid spec");
    // A run ended by unwinding frees its world as a finished one does:
    // madsim never frees a task still waiting when its runtime ends, so
    // each such run would leak its workers, ports and tasks.
    let built = factory.built.lock().unwrap();
    assert!(!built.is_empty());
    assert!(
        built.iter().all(|worker| worker.upgrade().is_none()),
        "a worker outlived its run"
    );
    history
}

#[test]
fn each_kind_of_spin_ends_the_run_as_live_3_and_nothing_else() {
    for (spin, name) in [
        (Spin::ReadsTheClock, "reads the clock"),
        (Spin::Yields, "yields"),
        (Spin::InStop, "spins in stop()"),
    ] {
        let history = run(spin);
        let last = history.events.last().expect("events");
        let EventKind::Spinning { steps, .. } = last.kind else {
            panic!("{name}: the run did not end at a spin: {:?}", last.kind);
        };
        assert_eq!(steps, SPIN_STEPS_MAX + 1, "{name}: stopped at the bound");
        assert!(history.is_complete(), "{name}: a spin ends the run");
        let verdict = judged_as(&history, "LIVE-3", name);
        let spec = RunSpec {
            seed: 3,
            ..RunSpec::default()
        };
        let report = format_failure(&spec, &history, &verdict);
        assert!(
            report.contains("LIVE-3") && report.contains("SPINNING"),
            "{report}"
        );
        assert!(report.contains("replay"), "{report}");
    }
}

/// `history` breaks `clause` and no other; it survives its own format and
/// is judged the same after it, as `sim check` would judge it.
fn judged_as(history: &History, clause: &str, name: &str) -> Verdict {
    let verdict = check(history);
    let clauses: Vec<&str> = verdict.violations.iter().map(|v| v.clause).collect();
    assert_eq!(clauses, [clause], "{name}: {verdict:?}");
    let again = History::from_jsonl(&history.to_jsonl()).expect("valid history");
    assert_eq!(check(&again), verdict, "{name}: judged again");
    verdict
}

#[test]
fn a_worker_that_panics_ends_the_run_as_live_4_with_its_message_and_place() {
    for (spin, name, said, at_ms) in [
        (
            Spin::Panics,
            "panics in serve()",
            "a term ended with 3 rows unaccounted",
            250,
        ),
        (
            Spin::PanicsInStop,
            "panics in stop()",
            "stop() found no lease to release",
            1_000,
        ),
    ] {
        let history = run(spin);
        let last = history.events.last().expect("events");
        let EventKind::Panicked { message } = &last.kind else {
            panic!("{name}: the run did not end at the panic: {:?}", last.kind);
        };
        assert!(message.starts_with(said), "{name}: {message}");
        assert!(
            message.contains("(at sim/tests/sim/spin.rs:"),
            "{name}: {message}"
        );
        assert_eq!(last.at_ms, at_ms, "{name}: stopped when it panicked");
        assert!(history.is_complete(), "{name}: a panic ends the run");
        let verdict = judged_as(&history, "LIVE-4", name);
        let report = format_failure(&RunSpec::default(), &history, &verdict);
        assert!(
            report.contains("LIVE-4") && report.contains("PANICKED"),
            "{report}"
        );
        assert!(report.contains(said), "{report}");
        // The same seed panics the same way.
        assert_eq!(run(spin).to_jsonl(), history.to_jsonl(), "{name}");
    }
}

#[test]
fn a_spin_stops_the_same_way_on_every_run_of_a_seed() {
    let first = run(Spin::Yields).to_jsonl();
    for _ in 0..3 {
        assert_eq!(run(Spin::Yields).to_jsonl(), first);
    }
}

/// The bound leaves room: the real worker, under every fault swarm draws,
/// never comes near it (the 100,000-seed sweep in
/// `sim/docs/performance.md` is the wider proof).
#[test]
fn the_real_worker_never_trips_the_bound() {
    for seed in 0..200 {
        let history = Sim::new(&retention_sim::search::swarm(seed, None))
            .run()
            .expect("a valid spec");
        let spun = history
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Spinning { .. }));
        assert!(!spun, "seed {seed}: the real worker spun");
    }
}
