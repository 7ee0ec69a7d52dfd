//! Builds the simulated world for a [`RunSpec`] (the database,
//! replicas and the fault node), runs its schedule and returns the history.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::runtime::{Handle, NodeHandle, Runtime};
use madsim::task::NodeId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::clock::SimClock;
use super::db_node::{DbNode, DbTiming};
use super::kernel::Kernel;
use super::recorder::{Moment, Recorder};
use super::replica_process::{ReplicaCtx, replica_process};
use super::seam::WorkerFactory;
use super::services::database;
use super::sim_target::{Replica, SimTarget, settle_stops};
use super::spin::{Liveness, SpinMeter};
use crate::calls::CallLedger;
use crate::db::{Bounds, DbView, Records};
use crate::model::{Actor, EventKind, Header, History, RunSpec};
use crate::plan::{JitterSeed, ReplicaPlan, RunDraws, in_turns, strike_in_turn, strike_nothing};

/// A fresh madsim runtime for `spec`: its seed, its network, and a time
/// limit past which a run counts as stuck.
pub fn runtime(spec: &RunSpec) -> Runtime {
    // madsim's own packet loss stays off: every message is a database
    // connection's, and TCP delays a lost packet rather than losing it
    // (`kernel.rs` models that).
    let mut runtime = Runtime::with_seed_and_config(spec.seed, madsim::Config::default());
    // A run that outlives its schedule, the wait for its stops and this
    // much more is stuck: madsim stops it with a panic instead of letting
    // it spin on. The wait for the stops is bounded by itself
    // (`settle_stops`), so reaching the limit is a harness bug, never a
    // plan's: a pause or a timeout of an hour ends as a verdict.
    let limit_ms = spec
        .duration_ms
        .saturating_add(spec.stop_bound_ms())
        .saturating_add(STUCK_AFTER_MS);
    runtime.set_time_limit(Duration::from_millis(limit_ms));
    runtime
}

/// Keeps the replicas' network draws apart from every other draw.
const NET_SALT: u64 = 0x4E45_5457_4F52_4B00;

/// Simulated time past the end of the schedule after which a run is stuck.
const STUCK_AFTER_MS: u64 = 600_000;

/// Where a run leaves its header, recorder and nodes as soon as it has
/// them, so that a run ended by unwinding (a replica that spun, LIVE-3, or
/// whose worker panicked, LIVE-4) still yields the history it recorded and
/// frees its world.
#[derive(Clone, Default)]
pub struct RunSlot {
    started: Arc<Mutex<Option<Started>>>,
    /// Read the database at this moment (`sim replay --at`).
    capture_at: Option<Moment>,
}

/// What a run has once its world is built.
struct Started {
    header: Header,
    recorder: Arc<Recorder>,
    world: Built,
}

/// What must be freed when a run ends, however it ends.
#[derive(Clone)]
struct Built {
    nodes: Vec<NodeId>,
    contexts: Vec<Arc<ReplicaCtx>>,
}

impl Built {
    /// Frees every task before the runtime ends (sim/MADSIM.md, pending
    /// tasks): madsim never frees a task still waiting when its runtime
    /// is dropped, and a worker's ports point back at its replica's
    /// context, a cycle only taking the worker breaks.
    async fn free(&self) {
        let handle = Handle::current();
        for node in &self.nodes {
            handle.kill(*node);
        }
        madsim::time::sleep(Duration::from_millis(1)).await;
        for ctx in &self.contexts {
            ctx.worker.lock().expect("worker slot").take();
        }
    }
}

impl std::fmt::Debug for RunSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunSlot")
    }
}

impl RunSlot {
    /// A slot whose run reads the database as it stands at `moment`.
    pub fn capturing(moment: Moment) -> Self {
        Self {
            capture_at: Some(moment),
            ..Self::default()
        }
    }

    /// The database as it stood at the captured moment, once the run has
    /// read it.
    pub fn capture(&self) -> Option<DbView> {
        let slot = self
            .started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.as_ref()?.recorder.take_capture()
    }

    /// The history recorded so far, if the run got as far as its header.
    pub fn history(&self) -> Option<History> {
        let slot = self
            .started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.as_ref().map(|started| History {
            header: started.header.clone(),
            events: started.recorder.take(),
        })
    }

    /// Frees the world of a run that ended by unwinding, in the runtime it
    /// ran in (`runtime.block_on(slot.free())`); what it had recorded is
    /// kept. No worker future is polled again (the recorder says the run
    /// stopped), so a replica that spun cannot spin again here.
    pub async fn free(&self) {
        let world = self
            .started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|started| started.world.clone());
        if let Some(world) = world {
            world.free().await;
        }
    }
}

/// Builds the world for `spec` (already validated) inside the current
/// madsim runtime, runs its schedule with the workers `factory` builds, and
/// returns the history (only its header when `record` is off).
pub async fn simulate(
    spec: RunSpec,
    factory: Arc<dyn WorkerFactory>,
    record: bool,
    slot: &RunSlot,
) -> History {
    let handle = Handle::current();
    let clock = SimClock::new(0);
    let recorder = Arc::new(
        Recorder::new(clock.clone(), record)
            .capturing(slot.capture_at)
            .branching(spec.branch.clone()),
    );
    let plan = RunDraws::draw(&spec);
    let retention_ms = i64::try_from(spec.worker.retention_ms).expect("validated");

    let rows = Records::with_rows(plan.rows_ms.iter().copied());
    let initial_rows = rows.len() as u64;
    let timing = DbTiming {
        batch_ms: spec.db_batch_ms_min..=spec.db_batch_ms_max,
        commit_ms: spec.db_commit_ms_min..=spec.db_commit_ms_max,
        bounds: Bounds {
            statement_ms: spec.statement_timeout_ms,
            lock_ms: spec.lock_timeout_ms,
            idle_in_transaction_ms: spec.idle_in_transaction_timeout_ms,
        },
        // The runner's adapter bounds deletes by the database's clock too.
        retention_ms: spec.database_retention_ms(),
    };
    let db = Arc::new(DbNode::new(
        spec.worker.lease_ttl_ms,
        rows,
        recorder.clone(),
        timing,
        spec.db_work_seed(),
    ));
    let service_nodes = start_services(&handle, &spec, &db);

    let next_call = Arc::new(AtomicU64::new(0));
    let skews_ms = plan.skews_ms();
    let mut replicas = Vec::new();
    let mut kernel_nodes = Vec::new();
    for ReplicaPlan {
        index,
        skew_ms,
        draws,
        stops,
        jitter,
    } in plan.replicas
    {
        let kernel_node = handle
            .create_node()
            .name(format!("r{index}-kernel"))
            .ip(ip(2, u8::try_from(index).expect("1..=5")))
            .build();
        // Its own stream, not the plan's: a run without packet loss draws
        // nothing from it, so turning loss on moves no other draw.
        let net_rng = ChaCha8Rng::seed_from_u64(spec.seed ^ NET_SALT ^ u64::from(index));
        let loss = spec.faults.packet_loss_permille;
        let kernel = Arc::new(Kernel::new(
            kernel_node.clone(),
            db.clone(),
            loss,
            net_rng,
            spec.rpc_timeout_ms,
        ));
        kernel_nodes.push(kernel_node);
        let ctx = Arc::new(ReplicaCtx {
            recorder: recorder.clone(),
            kernel,
            ledger: CallLedger::new(index, next_call.clone()),
            draws,
            call_timeout_ms: spec.rpc_timeout_ms,
            stop_triggers: stops,
            worker: Mutex::new(None),
            node: Mutex::new(None),
            alive: AtomicBool::new(true),
            stop_callers: AtomicU32::new(0),
            stops_pending: AtomicU32::new(0),
            stops_deferred: AtomicU32::new(0),
            spin: SpinMeter::new(),
        });
        // The host's clock: it outlives the process, crashes and restarts.
        let liveness: Arc<dyn Liveness> = ctx.clone();
        let host_clock = clock.skewed(skew_ms).metered(Arc::downgrade(&liveness));
        let node = start_replica(&handle, &ctx, &factory, host_clock.clone(), &spec, jitter);
        *ctx.node.lock().expect("node slot") = Some(node.id());
        replicas.push(Replica {
            ctx,
            node,
            clock: host_clock,
        });
    }

    let header = spec.header(skews_ms, initial_rows);
    let replicas = Arc::new(replicas);
    // Fault tasks live on a node of their own, killed with the rest at the
    // end: a task still sleeping when the runtime ends would never be freed.
    let faults_node = handle.create_node().name("faults").build();
    let world = Built {
        nodes: (service_nodes.iter())
            .chain(replicas.iter().map(|r| &r.node))
            .chain(kernel_nodes.iter())
            .chain([&faults_node])
            .map(NodeHandle::id)
            .collect(),
        contexts: replicas.iter().map(|r| r.ctx.clone()).collect(),
    };
    *slot.started.lock().expect("run slot") = Some(Started {
        header: header.clone(),
        recorder: recorder.clone(),
        world: world.clone(),
    });
    // Overlapping faults of one kind merged, as they take effect; a
    // dropped one keeps its task (see `EventEdit`).
    let striking = spec.striking_events();
    let dropped: Vec<bool> = striking.iter().map(|(_, dropped)| *dropped).collect();
    let events = striking.into_iter().map(|(event, _)| event).collect();
    for ((event, turn), dropped) in in_turns(events).into_iter().zip(dropped) {
        let target = SimTarget {
            handle: handle.clone(),
            replicas: replicas.clone(),
            recorder: recorder.clone(),
            db: db.clone(),
        };
        faults_node.spawn(async move {
            if dropped {
                strike_nothing(&target, &event, turn).await;
            } else {
                strike_in_turn(&target, event, turn).await;
            }
        });
    }

    madsim::time::sleep(Duration::from_millis(spec.duration_ms)).await;
    for replica in replicas.iter() {
        replica.ctx.spawn_stops_at_end(1);
    }
    settle_stops(&replicas, &recorder, header.stop_bound_ms).await;

    let end_ms = recorder.now_ms();
    let grace_ms = spec.worker.term_interval_ms
        + spec.worker.term_jitter_ms_max
        + spec.worker.lease_ttl_ms
        + spec.worker.renew_interval_ms;
    let stale_before_ms = end_ms - retention_ms - i64::try_from(grace_ms).unwrap_or(i64::MAX);
    let (rows_left, stale_rows_left) = db.read(|db| {
        let rows = db.records();
        (
            rows.len() as u64,
            rows.count_older_than(stale_before_ms) as u64,
        )
    });
    let rows_inserted = db.inserted.load(Ordering::Relaxed);
    let rows_early_by_true_time =
        recorder.read(|events| db.rows_early_by_true_time(events, retention_ms));
    recorder.record(
        Actor::World,
        0,
        EventKind::Final {
            rows_left,
            rows_inserted,
            stale_rows_left,
            rows_early_by_true_time,
        },
    );
    // A capture after the last events is taken by this last look.
    db.read(|_| ());

    world.free().await;
    History {
        header,
        events: recorder.take(),
    }
}

/// The database's node. (The lease row lives in the database, as in
/// production: there is no separate lease service.)
fn start_services(handle: &Handle, spec: &RunSpec, db: &Arc<DbNode>) -> Vec<NodeHandle> {
    let (db, arrivals) = (db.clone(), spec.arrivals_per_sec);
    let db_node = handle
        .create_node()
        .name("db")
        .ip(ip(0, 2))
        .init(move || database(db.clone(), arrivals))
        .build();
    vec![db_node]
}

fn start_replica(
    handle: &Handle,
    ctx: &Arc<ReplicaCtx>,
    factory: &Arc<dyn WorkerFactory>,
    clock: SimClock,
    spec: &RunSpec,
    jitter: JitterSeed,
) -> NodeHandle {
    let (ctx, config, factory) = (ctx.clone(), spec.worker.config(), factory.clone());
    let restarts = Arc::new(AtomicU32::new(0));
    let index = ctx.replica();
    handle
        .create_node()
        .name(format!("r{index}"))
        .ip(ip(1, u8::try_from(index).expect("1..=5")))
        .init(move || {
            let incarnation = restarts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let seed = jitter.for_incarnation(incarnation);
            replica_process(
                ctx.clone(),
                factory.clone(),
                clock.clone(),
                config.clone(),
                seed,
            )
        })
        .build()
}

fn ip(subnet: u8, host: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, subnet, host))
}
