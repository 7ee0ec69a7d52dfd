//! A real-mode replica: its identity, fault draws and term count, and the
//! worker it runs, which can be started, killed, paused and stopped.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::calls::{CallFaults, CallLedger, CallTicket, FaultDraws};
use crate::model::{EventKind, SimulatedWorker, TermSummary, WorkerUnderTest, panic_message};
use crate::plan::{JitterSeed, ReplicaPlan, StopTriggers};
use crate::subject::{TokioRuntime, variant_worker};
use futures_util::FutureExt;
use retention_worker::pg::{PgLeaseService, PgRecords};
use retention_worker::{Dependencies, SeededJitter, Worker, WorkerConfig};
use tokio::task::JoinHandle;

use super::gate::{Gate, GatedClock, InFlight};
use super::log::RealRecorder;
use super::port::{CallingReplica, RealPort};

/// A running process's worker, and the variant's detached tasks (none for
/// the production worker).
type Process = (
    Arc<dyn SimulatedWorker>,
    JoinHandle<()>,
    Option<TokioRuntime<GatedClock>>,
);

/// One replica: identity, calls and fault draws (the simulator's own), and
/// its current worker.
pub struct Replica {
    /// The replica's number, from 1.
    pub index: u32,
    /// The run's log.
    pub log: Arc<RealRecorder>,
    /// Numbers its calls and terms.
    pub ledger: CallLedger,
    draws: FaultDraws,
    /// The plan's stops during this replica's calls.
    stop_triggers: StopTriggers,
    /// Seeds each of its processes' jitter.
    jitter: JitterSeed,
    /// Database calls in flight, all replicas'.
    pub in_flight: Arc<InFlight>,
    /// `stop()` callers so far.
    pub stop_callers: AtomicU32,
    /// Processes started so far.
    incarnations: AtomicU32,
    /// How long a call waits for its answer before giving up (the
    /// adapters' call timeout, counted from the call).
    pub call_timeout_ms: u64,
    /// The current process's freeze; a restarted process gets a fresh one.
    gate: Mutex<Gate>,
    /// How far its host's wall clock has been stepped, in ms.
    pub clock_offset_ms: Arc<std::sync::atomic::AtomicI64>,
    /// Between a granted acquire and the term's end.
    pub leading: AtomicBool,
    /// The production lease adapter.
    pub leases: PgLeaseService,
    /// The production records adapter.
    pub records: PgRecords,
    /// As [`Shared::worker`].
    worker: WorkerUnderTest,
    /// The current process's worker and its serving task.
    running: Mutex<Option<Process>>,
    /// Held through a kill or stop and the restart after it, so two of them
    /// never interleave on one replica (which would leave two workers).
    pub lifecycle: Arc<tokio::sync::Mutex<()>>,
}

/// What the replicas share.
#[derive(Clone)]
pub struct Shared {
    /// The run's log.
    pub log: Arc<RealRecorder>,
    /// Numbers calls across replicas.
    pub next_call: Arc<AtomicU64>,
    /// Database calls in flight.
    pub in_flight: Arc<InFlight>,
    /// The production lease adapter.
    pub leases: PgLeaseService,
    /// The production records adapter.
    pub records: PgRecords,
    /// The worker the replicas run.
    pub worker: WorkerUnderTest,
    /// The adapters' call timeout, which the ports also hold each call to
    /// from its start, network delays included.
    pub call_timeout_ms: u64,
}

impl Replica {
    /// The replica `plan` describes (drawn as the simulator draws it, so
    /// both draw the same faults for the same calls).
    pub fn new(plan: ReplicaPlan, shared: &Shared) -> Arc<Self> {
        let index = plan.index;
        Arc::new(Self {
            index,
            log: shared.log.clone(),
            ledger: CallLedger::new(index, shared.next_call.clone()),
            draws: plan.draws,
            stop_triggers: plan.stops,
            jitter: plan.jitter,
            in_flight: shared.in_flight.clone(),
            stop_callers: AtomicU32::new(0),
            incarnations: AtomicU32::new(0),
            call_timeout_ms: shared.call_timeout_ms,
            gate: Mutex::new(Gate::new()),
            clock_offset_ms: Arc::new(std::sync::atomic::AtomicI64::new(0)),
            leading: AtomicBool::new(false),
            leases: shared.leases.clone(),
            records: shared.records.clone(),
            worker: shared.worker,
            running: Mutex::new(None),
            lifecycle: Arc::new(tokio::sync::Mutex::new(())),
        })
    }

    /// Records an event of this replica, in its current term.
    pub fn record(&self, kind: EventKind) {
        self.log
            .record(self.ledger.actor(), self.ledger.term(), kind);
    }

    /// Starts a fresh worker serving terms. Each process's jitter is seeded
    /// from the plan's and how many processes came before it, as the
    /// simulator seeds a restarted replica's.
    pub fn start(self: &Arc<Self>, config: WorkerConfig) {
        let incarnation = self.incarnations.fetch_add(1, Ordering::SeqCst);
        let jitter_seed = self.jitter.for_incarnation(incarnation);
        let gate = self.gate();
        let port = RealPort {
            replica: self.clone(),
            gate: gate.clone(),
        };
        let clock = GatedClock(gate, self.clock_offset_ms.clone());
        let deps = Dependencies {
            clock: clock.clone(),
            leases: port.clone(),
            records: port,
        };
        let owner = format!("r{}", self.index);
        let (worker, runtime): (Arc<dyn SimulatedWorker>, _) = match self.worker {
            WorkerUnderTest::Production => (
                Arc::new(Worker::new(owner, config, deps).expect("valid config")),
                None,
            ),
            WorkerUnderTest::Variant { flaw } => {
                let runtime = TokioRuntime::new(clock);
                let worker = variant_worker(flaw, owner, config, deps, runtime.clone());
                (worker, Some(runtime))
            }
        };
        let (me, serving) = (self.clone(), worker.clone());
        let task = tokio::spawn(async move {
            let on_term = |summary: TermSummary| {
                me.leading.store(false, Ordering::SeqCst);
                me.record(summary.into());
            };
            let serve = serving.serve(SeededJitter::new(jitter_seed), &on_term);
            // LIVE-4, as in the simulator: the panic is the replica's
            // event, and its process is gone (nothing left to stop).
            if let Err(payload) = AssertUnwindSafe(serve).catch_unwind().await {
                me.record(EventKind::Panicked {
                    message: panic_message(payload.as_ref()),
                });
                me.leading.store(false, Ordering::SeqCst);
                drop(me.running.lock().unwrap().take());
            }
        });
        *self.running.lock().unwrap() = Some((worker, task, runtime));
    }

    /// Steps the host's wall clock by `delta_ms` (NTP, `date -s`): what the
    /// worker reads as now jumps; its timers do not.
    pub fn step_clock(&self, delta_ms: i64) {
        let epoch_ms = self.log.epoch_ms;
        let from_ms = super::log::wall_us() / 1_000 + self.clock_offset_ms.load(Ordering::SeqCst);
        self.clock_offset_ms.fetch_add(delta_ms, Ordering::SeqCst);
        let to_ms = from_ms + delta_ms;
        let kind = EventKind::ClockStepped {
            from_ms: from_ms - epoch_ms,
            to_ms: to_ms - epoch_ms,
        };
        self.record(kind);
    }

    /// Kills the process: its tasks are dropped wherever they are; calls
    /// already sent still reach the database.
    pub async fn kill(&self) {
        let running = self.running.lock().unwrap().take();
        self.record(EventKind::Crashed);
        self.leading.store(false, Ordering::SeqCst);
        if let Some((_, task, runtime)) = running {
            task.abort();
            let _ = task.await;
            if let Some(runtime) = runtime {
                runtime.abort_all();
            }
        }
        *self.gate.lock().unwrap() = Gate::new();
    }

    fn gate(&self) -> Gate {
        self.gate.lock().unwrap().clone()
    }

    /// Records that a fresh process of this replica starts.
    pub fn record_restart(&self) {
        self.record(EventKind::Restarted);
    }

    /// Freezes the process (a GC pause) until [`Replica::thaw`]; `for_ms` is
    /// what the history says it will last.
    pub fn freeze(&self, for_ms: u64) -> Gate {
        let gate = self.gate();
        gate.close();
        self.record(EventKind::Paused { for_ms });
        gate
    }

    /// Thaws a process [`Replica::freeze`] froze.
    pub fn thaw(&self, gate: &Gate) {
        // A process killed while frozen has no thaw; its successor was
        // never frozen.
        if self.gate().same(gate) {
            self.record(EventKind::Resumed);
        }
        gate.open();
    }

    /// `callers` concurrent `stop()` calls; resolves when all have.
    pub async fn stop(self: &Arc<Self>, callers: u32) {
        let Some(worker) = self
            .running
            .lock()
            .unwrap()
            .as_ref()
            .map(|(worker, _, _)| worker.clone())
        else {
            return;
        };
        let calls: Vec<_> = (0..callers)
            .map(|_| {
                let (me, worker) = (self.clone(), worker.clone());
                tokio::spawn(async move {
                    // A frozen process calls nothing until it thaws.
                    me.gate().pass().await;
                    let caller = me.stop_callers.fetch_add(1, Ordering::SeqCst) + 1;
                    me.record(EventKind::StopCalled { caller });
                    worker.stop().await;
                    me.record(EventKind::StopResolved { caller });
                })
            })
            .collect();
        for call in calls {
            call.await.expect("a stop caller panicked");
        }
        // stop() resolved, so serve() has settled: its task ends at once.
        let running = self.running.lock().unwrap().take();
        if let Some((_, task, _)) = running {
            task.await.expect("the serve task panicked");
        }
    }

    /// This call's faults, as the simulator draws them for it.
    pub fn draw(&self, ticket: &CallTicket) -> CallFaults {
        self.draws.draw(ticket.op, ticket.nth)
    }

    /// Starts the stops the plan times to race this call (`stop_during`).
    pub fn trigger_stops(self: &Arc<Self>, ticket: &CallTicket) {
        for callers in self.stop_triggers.callers_at(ticket.op, ticket.nth) {
            let me = self.clone();
            tokio::spawn(async move {
                let _alone = me.lifecycle.lock().await;
                me.stop(callers).await;
            });
        }
    }
}

impl CallingReplica for Replica {
    fn log(&self) -> &Arc<RealRecorder> {
        &self.log
    }

    fn ledger(&self) -> &CallLedger {
        &self.ledger
    }

    fn record(&self, kind: EventKind) {
        Replica::record(self, kind);
    }

    fn call_issued(self: Arc<Self>, ticket: &CallTicket) {
        self.trigger_stops(ticket);
    }

    fn draw(&self, ticket: &CallTicket) -> CallFaults {
        Replica::draw(self, ticket)
    }

    fn in_flight(&self) -> &Arc<InFlight> {
        &self.in_flight
    }

    fn call_timeout_ms(&self) -> u64 {
        self.call_timeout_ms
    }

    fn leading(&self) -> &AtomicBool {
        &self.leading
    }

    fn leases(&self) -> &PgLeaseService {
        &self.leases
    }

    fn records(&self) -> &PgRecords {
        &self.records
    }
}
