//! A worker replica: the client side of the dependencies over madsim's
//! network, where faults are injected and calls are recorded, and the
//! replica process that serves terms.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::net::Endpoint;
use madsim::net::rpc::Request;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use retention_worker::{
    CallError, Dependencies, Lease, LeaseService, RecordsRepository, SeededJitter, WorkerConfig,
};

use crate::SimClock;
use crate::history::{Actor, EventKind, Invocation, LeaseRec, Outcome};
use crate::recorder::Recorder;
use crate::services::{
    AcquireReq, Caller, DB_ADDR, DeleteReq, LEASE_ADDR, ReleaseReq, RenewReq, addr, from_rec,
    to_rec,
};
use crate::spec::{CallOutcome, FaultConfig, OpKind};
use crate::subject::{SimulatedWorker, TermSummary, WorkerFactory};

/// What a replica keeps across crashes: its identity, its fault draws, its
/// term count and the handle to its current worker.
pub(crate) struct ReplicaCtx {
    pub replica: u32,
    pub recorder: Arc<Recorder>,
    pub faults: FaultConfig,
    pub rpc_timeout_ms: u64,
    pub renew_interval_ms: u64,
    pub rng: Mutex<ChaCha8Rng>,
    pub next_call: Arc<AtomicU64>,
    pub term: AtomicU32,
    pub calls_by_op: Mutex<BTreeMap<OpKind, u32>>,
    /// (op, nth call, callers): stop the replica when that call is issued.
    pub stop_triggers: Vec<(OpKind, u32, u32)>,
    /// (op, nth call) -> the fault that call meets.
    pub call_faults: BTreeMap<(OpKind, u32), ChosenFault>,
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
}

impl ReplicaCtx {
    fn actor(&self) -> Actor {
        Actor::Replica(self.replica)
    }

    fn record(&self, kind: EventKind) {
        let term = self.term.load(Ordering::Relaxed);
        self.recorder.record(self.actor(), term, kind);
    }

    /// Starts `callers` concurrent `stop()` calls on this replica's current
    /// worker, as tasks of the replica's node.
    pub fn spawn_stops(self: &Arc<Self>, callers: u32) {
        let Some(worker) = self.worker.lock().expect("worker slot").clone() else {
            // The process is starting: it stops as soon as its worker exists.
            self.stops_deferred.fetch_add(callers, Ordering::Relaxed);
            return;
        };
        if !self.alive.load(Ordering::Relaxed) {
            return;
        }
        // A fresh handle: one taken before a restart spawns into the dead
        // incarnation, whose tasks never run.
        let id = self.node.lock().expect("node slot").expect("set at start");
        let node = Handle::current().get_node(id).expect("the node exists");
        for _ in 0..callers {
            let caller = self.stop_callers.fetch_add(1, Ordering::Relaxed) + 1;
            self.stops_pending.fetch_add(1, Ordering::Relaxed);
            let (ctx, worker) = (self.clone(), worker.clone());
            node.spawn(async move {
                // Recorded when the call really starts: on a paused node
                // that is only after the resume.
                ctx.record(EventKind::StopCalled { caller });
                worker.stop().await;
                ctx.record(EventKind::StopResolved { caller });
                ctx.stops_pending.fetch_sub(1, Ordering::Relaxed);
            });
        }
    }

    fn record_term_end(&self, term: TermSummary) {
        self.record(term.into());
    }

    /// Draws this call's faults.
    fn draw(&self, op: OpKind, nth: u32) -> CallFaults {
        let f = &self.faults;
        let mut rng = self.rng.lock().expect("fault rng");
        // Every call draws the same numbers whichever knobs are on, so that
        // turning one fault off (as shrinking does) leaves the others' draws
        // where they were.
        let rolls: [u32; 4] = std::array::from_fn(|_| rng.gen_range(0..1_000));
        let spreads: [u64; 3] = std::array::from_fn(|_| rng.r#gen());
        let reject = rolls[0] < f.reject_permille;
        let ambiguous = !reject && rolls[1] < f.ambiguous_permille;
        let revoke = op == OpKind::Renew && !reject && rolls[2] < f.null_renew_permille;
        let late_renewal = op == OpKind::Renew && rolls[3] < f.renew_reply_delay_permille;
        let within = |spread: u64, max: u64| spread % (max + 1);
        let request_delay_ms = within(spreads[0], f.latency_ms_max);
        let mut reply_delay_ms = within(spreads[1], f.latency_ms_max);
        if late_renewal {
            // Past the next renewal tick: an overlapping worker would have
            // issued another renewal meanwhile.
            reply_delay_ms +=
                self.renew_interval_ms + within(spreads[2], self.renew_interval_ms / 2);
        }
        let mut faults = CallFaults {
            request_delay_ms,
            reply_delay_ms,
            reject,
            ambiguous,
            revoke,
            corrupt: false,
        };
        if let Some(chosen) = self.call_faults.get(&(op, nth)) {
            faults.request_delay_ms += chosen.request_delay_ms;
            faults.reply_delay_ms += chosen.reply_delay_ms;
            faults.reject |= chosen.outcome == CallOutcome::Reject;
            faults.ambiguous |= chosen.outcome == CallOutcome::LoseReply;
            faults.revoke |= chosen.outcome == CallOutcome::Revoke;
            faults.corrupt |= chosen.outcome == CallOutcome::Corrupt;
        }
        faults
    }
}

/// A fault a scenario put on one chosen call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChosenFault {
    pub outcome: CallOutcome,
    pub request_delay_ms: u64,
    pub reply_delay_ms: u64,
}

struct CallFaults {
    request_delay_ms: u64,
    reply_delay_ms: u64,
    reject: bool,
    ambiguous: bool,
    revoke: bool,
    corrupt: bool,
}

/// The lease service and database as one simulated replica reaches them:
/// every call is recorded, goes over madsim's network with a timeout, and may
/// meet an injected fault.
#[derive(Clone)]
pub struct SimPort {
    ctx: Arc<ReplicaCtx>,
    endpoint: Arc<Endpoint>,
}

impl SimPort {
    /// Records the call, injects its faults, sends it with a timeout, and
    /// records the answer. A lost message surfaces as an ambiguous error.
    async fn call<R: Request>(
        &self,
        invocation: Invocation,
        to: &str,
        request: impl FnOnce(Caller, bool) -> R,
        outcome: impl FnOnce(&R::Response) -> Outcome,
        garble: impl FnOnce(R::Response) -> R::Response,
    ) -> Result<R::Response, CallError> {
        let ctx = &self.ctx;
        let op = invocation.kind();
        if op == OpKind::Acquire {
            ctx.term.fetch_add(1, Ordering::Relaxed);
        }
        let call = ctx.next_call.fetch_add(1, Ordering::Relaxed) + 1;
        ctx.record(EventKind::Invoke { call, invocation });
        let nth = self.fire_stop_triggers(op);
        let faults = ctx.draw(op, nth);
        let caller = Caller {
            call,
            replica: ctx.replica,
            term: ctx.term.load(Ordering::Relaxed),
        };
        let request = request(caller, faults.revoke);
        let exchange = async {
            sleep_ms(faults.request_delay_ms).await;
            if faults.reject {
                return Err(CallError::rejected("injected: refused before applying"));
            }
            let answer = self
                .endpoint
                .call(addr(to), request)
                .await
                .map_err(|error| CallError::ambiguous(format!("network: {error}")))?;
            sleep_ms(faults.reply_delay_ms).await;
            if faults.ambiguous {
                return Err(CallError::ambiguous("injected: applied, reply lost"));
            }
            Ok(if faults.corrupt {
                garble(answer)
            } else {
                answer
            })
        };
        let timeout = Duration::from_millis(ctx.rpc_timeout_ms);
        let result = match madsim::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(CallError::ambiguous(format!(
                "no reply within {} ms",
                ctx.rpc_timeout_ms
            ))),
        };
        let recorded = Outcome::of(&result, outcome);
        ctx.record(EventKind::Return {
            call,
            op,
            outcome: recorded,
        });
        result
    }

    /// Counts this call of `op`, stops the replica if a trigger says so, and
    /// returns which call of `op` it is.
    fn fire_stop_triggers(&self, op: OpKind) -> u32 {
        let ctx = &self.ctx;
        let nth = {
            let mut counts = ctx.calls_by_op.lock().expect("call counts");
            let count = counts.entry(op).or_default();
            *count += 1;
            *count
        };
        for &(trigger_op, trigger_nth, callers) in &ctx.stop_triggers {
            if (trigger_op, trigger_nth) == (op, nth) {
                ctx.spawn_stops(callers);
            }
        }
        nth
    }
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        madsim::time::sleep(Duration::from_millis(ms)).await;
    }
}

fn lease_outcome(answer: &Option<LeaseRec>) -> Outcome {
    Outcome::Lease(answer.clone())
}

impl LeaseService for SimPort {
    async fn acquire(&self, owner_id: &str) -> Result<Option<Lease>, CallError> {
        let owner = owner_id.to_owned();
        let request = |caller, _| AcquireReq { caller, owner };
        let answer = self
            .call(
                Invocation::Acquire,
                LEASE_ADDR,
                request,
                lease_outcome,
                |answer| {
                    answer.map(|lease| LeaseRec {
                        owner: "intruder".into(),
                        ..lease
                    })
                },
            )
            .await?;
        Ok(answer.as_ref().map(from_rec))
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, CallError> {
        let lease = to_rec(lease);
        let sent_token = lease.token;
        let invocation = Invocation::Renew {
            lease: lease.clone(),
        };
        let request = |caller, revoke| RenewReq {
            caller,
            lease,
            revoke,
        };
        let answer = self
            .call(invocation, LEASE_ADDR, request, lease_outcome, |answer| {
                answer.map(|lease| LeaseRec {
                    token: sent_token,
                    ..lease
                })
            })
            .await?;
        Ok(answer.as_ref().map(from_rec))
    }

    async fn release(&self, lease: &Lease) -> Result<(), CallError> {
        let lease = to_rec(lease);
        let invocation = Invocation::Release {
            lease: lease.clone(),
        };
        let request = |caller, _| ReleaseReq { caller, lease };
        self.call(
            invocation,
            LEASE_ADDR,
            request,
            |_| Outcome::Done,
            |answer| answer,
        )
        .await
    }
}

impl RecordsRepository for SimPort {
    async fn delete_batch(
        &self,
        older_than_ms: i64,
        limit: u32,
        token: u64,
    ) -> Result<u64, CallError> {
        let invocation = Invocation::Delete {
            older_than_ms,
            limit,
            token,
        };
        let request = |caller, _| DeleteReq {
            caller,
            older_than_ms,
            limit,
            token,
        };
        let outcome = |answer: &Result<u64, String>| match answer {
            Ok(rows) => Outcome::Deleted(*rows),
            Err(reason) => Outcome::Failed {
                kind: "fenced".into(),
                detail: reason.clone(),
            },
        };
        self.call(invocation, DB_ADDR, request, outcome, |answer| answer)
            .await?
            .map_err(CallError::fenced)
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
    let endpoint = Arc::new(Endpoint::bind("0.0.0.0:0").await.expect("bind a replica"));
    let port = SimPort {
        ctx: ctx.clone(),
        endpoint,
    };
    let deps = Dependencies {
        clock,
        leases: port.clone(),
        records: port,
    };
    let worker = factory.build(format!("r{}", ctx.replica), config, deps);
    *ctx.worker.lock().expect("worker slot") = Some(worker.clone());
    let deferred = ctx.stops_deferred.swap(0, Ordering::Relaxed);
    if deferred > 0 {
        ctx.spawn_stops(deferred);
    }
    let on_term = |term: TermSummary| ctx.record_term_end(term);
    worker.serve(SeededJitter::new(jitter_seed), &on_term).await;
    std::future::pending::<()>().await;
}
