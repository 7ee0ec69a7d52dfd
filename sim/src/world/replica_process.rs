//! A worker replica: what it keeps across crashes, the `stop()` callers it
//! spawns, and its process, which serves terms with a fresh worker.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use madsim::runtime::Handle;
use madsim::task::NodeId;
use retention_worker::{Dependencies, SeededJitter, WorkerConfig};

use super::clock::SimClock;
use super::kernel::Kernel;
use super::panics::stop_the_run;
use super::port::{CallingReplica, SimPort};
use super::recorder::Recorder;
use super::seam::WorkerFactory;
use super::spin::{Liveness, Metered, SPIN_WINDOW_MS, SpinMeter, stop_the_spin};
use crate::calls::{CallLedger, FaultDraws};
use crate::model::{EventKind, OpKind, SimulatedWorker, TermSummary};
use crate::plan::StopTriggers;

/// What a replica keeps across crashes: its identity, its calls and fault
/// draws, and the handle to its current worker.
pub(crate) struct ReplicaCtx {
    pub recorder: Arc<Recorder>,
    /// The replica's network stack: its connections to the database.
    pub kernel: Arc<Kernel>,
    pub ledger: CallLedger,
    pub draws: FaultDraws,
    pub call_timeout_ms: u64,
    /// (op, nth call, callers): stop the replica when that call is issued.
    pub stop_triggers: StopTriggers,
    pub worker: Mutex<Option<Arc<dyn SimulatedWorker>>>,
    /// The replica's node, so that stop callers run (and pause, and die)
    /// with the process they stop.
    pub node: Mutex<Option<NodeId>>,
    /// False between a crash and the restart.
    pub alive: AtomicBool,
    pub stop_callers: AtomicU32,
    /// Stop calls spawned and not yet resolved.
    pub stops_pending: AtomicU32,
    /// Stop calls that arrived while no worker existed (after a crash,
    /// before the restarted process built its worker).
    pub stops_deferred: AtomicU32,
    /// Its steps in the current window of simulated time (LIVE-3).
    pub spin: SpinMeter,
}

impl ReplicaCtx {
    pub fn replica(&self) -> u32 {
        self.ledger.replica()
    }

    pub fn record(&self, kind: EventKind) {
        self.recorder
            .record(self.ledger.actor(), self.ledger.term(), kind);
    }

    /// The run's own stop at its end: a replica down then gets it when it
    /// restarts (the run is over for it too), unlike a planned stop, which
    /// a dead process never hears.
    pub fn spawn_stops_at_end(self: &Arc<Self>, callers: u32) {
        if self.alive.load(Ordering::Relaxed) {
            self.spawn_stops(callers);
        } else {
            self.stops_deferred.fetch_add(callers, Ordering::Relaxed);
        }
    }

    /// Starts `callers` concurrent `stop()` calls on this replica's current
    /// worker, as tasks of the replica's node.
    pub fn spawn_stops(self: &Arc<Self>, callers: u32) {
        // A dead process gets no signal: the process that restarts later
        // never heard this stop (checked before "starting" below, which a
        // dead process's empty worker slot also looks like).
        if !self.alive.load(Ordering::Relaxed) {
            return;
        }
        let Some(worker) = self.worker.lock().expect("worker slot").clone() else {
            // The process is starting: it stops as soon as its worker exists.
            self.stops_deferred.fetch_add(callers, Ordering::Relaxed);
            return;
        };
        // A fresh handle: one taken before a restart spawns into the dead
        // incarnation, whose tasks never run.
        let id = self.node.lock().expect("node slot").expect("set at start");
        let node = Handle::current().get_node(id).expect("the node exists");
        for _ in 0..callers {
            let caller = self.stop_callers.fetch_add(1, Ordering::Relaxed) + 1;
            self.stops_pending.fetch_add(1, Ordering::Relaxed);
            let (ctx, worker) = (self.clone(), worker.clone());
            let metered = ctx.clone();
            node.spawn(Metered::new(
                async move {
                    // Recorded when the call really starts: on a paused node
                    // that is only after the resume.
                    ctx.record(EventKind::StopCalled { caller });
                    worker.stop().await;
                    ctx.record(EventKind::StopResolved { caller });
                    ctx.stops_pending.fetch_sub(1, Ordering::Relaxed);
                },
                metered,
            ));
        }
    }

    /// Stops the replica if the plan says so when it issues the `nth` call
    /// of `op`.
    pub fn fire_stop_triggers(self: &Arc<Self>, op: OpKind, nth: u32) {
        for callers in self.stop_triggers.callers_at(op, nth) {
            self.spawn_stops(callers);
        }
    }

    /// The process is killed: no stop pending or deferred survives it, nor
    /// its worker, and its sockets close after what they had sent.
    pub fn die(&self) {
        self.record(EventKind::Crashed);
        self.alive.store(false, Ordering::Relaxed);
        self.stops_pending.store(0, Ordering::Relaxed);
        // A stop the starting process had not yet taken dies with it.
        self.stops_deferred.store(0, Ordering::Relaxed);
        self.worker.lock().expect("worker slot").take();
        // The kernel closes a dead process's sockets after what they had
        // sent: the database then rolls back their transactions. This comes
        // before the node is killed, so that the calls the kill drops send
        // nothing more (no ROLLBACK, no cancel request: a dead process sends
        // neither).
        self.kernel.process_died();
    }

    /// A fresh process of the replica is about to start on its node.
    pub fn reborn(&self) {
        self.record(EventKind::Restarted);
        self.alive.store(true, Ordering::Relaxed);
        self.stops_pending.store(0, Ordering::Relaxed);
        self.worker.lock().expect("worker slot").take();
    }
}

impl CallingReplica for ReplicaCtx {
    fn replica(&self) -> u32 {
        ReplicaCtx::replica(self)
    }

    fn ledger(&self) -> &CallLedger {
        &self.ledger
    }

    fn draws(&self) -> &FaultDraws {
        if let Some(salt) = self.recorder.branch_salt() {
            let knobs = self.recorder.branch().and_then(|b| b.faults.clone());
            self.draws.stir(salt, knobs);
        }
        &self.draws
    }

    fn kernel(&self) -> &Arc<Kernel> {
        &self.kernel
    }

    fn call_timeout_ms(&self) -> u64 {
        self.call_timeout_ms
    }

    fn record(&self, kind: EventKind) {
        ReplicaCtx::record(self, kind);
    }

    fn call_issued(self: Arc<Self>, op: OpKind, nth: u32) {
        // A branch drops the plan's stops on calls made after it.
        if self.recorder.branch_salt().is_some() {
            return;
        }
        self.fire_stop_triggers(op, nth);
    }
}

impl Liveness for ReplicaCtx {
    fn step(&self) {
        if let Some(steps) = self.spin.step() {
            self.record(EventKind::Spinning {
                steps,
                window_ms: SPIN_WINDOW_MS,
            });
            self.recorder.stop_run();
            stop_the_spin(self.replica());
        }
    }

    fn run_stopped(&self) -> bool {
        self.recorder.run_stopped()
    }

    fn panicked(&self, message: String) -> ! {
        self.record(EventKind::Panicked { message });
        self.recorder.stop_run();
        stop_the_run(self.replica())
    }
}

/// A replica process: a fresh worker serving terms until stopped. It then
/// idles, so that stop callers still running on this node can finish.
pub(crate) async fn replica_process(
    ctx: Arc<ReplicaCtx>,
    factory: Arc<dyn WorkerFactory>,
    clock: SimClock,
    config: WorkerConfig,
    jitter_seed: u64,
) {
    let port = SimPort::new(ctx.clone());
    let deps = Dependencies {
        clock,
        leases: port.clone(),
        records: port,
    };
    let worker = factory.build(format!("r{}", ctx.replica()), config, deps);
    *ctx.worker.lock().expect("worker slot") = Some(worker.clone());
    let deferred = ctx.stops_deferred.swap(0, Ordering::Relaxed);
    if deferred > 0 {
        ctx.spawn_stops(deferred);
    }
    let on_term = |term: TermSummary| ctx.record(term.into());
    Metered::new(
        worker.serve(SeededJitter::new(jitter_seed), &on_term),
        ctx.clone(),
    )
    .await;
    std::future::pending::<()>().await;
}
