//! Builds the simulated world for a [`RunSpec`], runs it under madsim with
//! its fault plan, and returns the recorded history.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::runtime::{Handle, NodeHandle, Runtime};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_worker::memory::{LeaseTable, RecordTable};

use crate::SimClock;
use crate::history::{Actor, EventKind, Header, History};
use crate::recorder::Recorder;
use crate::replica::{ChosenFault, ReplicaCtx, replica_process};
use crate::services::{database, lease_service};
use crate::spec::{FaultEvent, OpKind, RunSpec, SpecError};
use crate::subject::{RealWorker, WorkerFactory};
use crate::variant::VariantFactory;

/// Runs `spec` in a fresh madsim runtime and returns its history: the real
/// worker, or the flawed variant `spec.flaw` names.
pub fn run(spec: &RunSpec) -> Result<History, SpecError> {
    run_with(spec, factory_for(spec))
}

/// Runs `spec` with the workers `factory` builds: your own implementation,
/// for example. `spec.flaw` is ignored.
pub fn run_with(spec: &RunSpec, factory: Arc<dyn WorkerFactory>) -> Result<History, SpecError> {
    spec.validate()?;
    let mut runtime = Runtime::with_seed_and_config(spec.seed, network(spec));
    // A run that outlives its schedule by this much is stuck: madsim stops it
    // with a panic instead of letting it spin on.
    runtime.set_time_limit(Duration::from_millis(spec.duration_ms + STUCK_AFTER_MS));
    let spec = spec.clone();
    Ok(runtime.block_on(simulate(spec, factory, true)))
}

/// Runs `spec` like [`run`] but records nothing: the bare simulation, for
/// measuring what recording and checking cost.
pub fn run_unrecorded(spec: &RunSpec) -> Result<(), SpecError> {
    spec.validate()?;
    let mut runtime = Runtime::with_seed_and_config(spec.seed, network(spec));
    runtime.set_time_limit(Duration::from_millis(spec.duration_ms + STUCK_AFTER_MS));
    let spec = spec.clone();
    runtime.block_on(simulate(spec.clone(), factory_for(&spec), false));
    Ok(())
}

/// Simulated time past the end of the schedule after which a run is stuck.
const STUCK_AFTER_MS: u64 = 600_000;

/// The real worker, or the variant carrying `spec.flaw`.
pub fn factory_for(spec: &RunSpec) -> Arc<dyn WorkerFactory> {
    match spec.flaw {
        None => Arc::new(RealWorker),
        Some(flaw) => Arc::new(VariantFactory { flaw: Some(flaw) }),
    }
}

/// madsim's configuration for `spec`: its default latency, plus packet loss.
pub fn network(spec: &RunSpec) -> madsim::Config {
    let mut config = madsim::Config::default();
    config.net.packet_loss_rate = f64::from(spec.faults.packet_loss_permille) / 1_000.0;
    config
}

/// Runs `spec` inside the madsim runtime already running this task, for
/// callers that manage the runtime themselves (madsim's determinism check).
pub async fn run_in_current_runtime(spec: &RunSpec) -> Result<History, SpecError> {
    spec.validate()?;
    Ok(simulate(spec.clone(), factory_for(spec), true).await)
}

/// The longest a `stop()` may take: two calls in flight that run into their
/// timeout (a delete and a renewal), the release, the longest pause, slack.
fn stop_bound_ms(spec: &RunSpec) -> u64 {
    let pause_ms = spec
        .events
        .iter()
        .map(|event| match event {
            FaultEvent::Pause { for_ms, .. } => *for_ms,
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    3 * spec.rpc_timeout_ms + pause_ms + 1_000
}

/// The faults `spec` puts on replica `index`'s chosen calls.
fn chosen_faults(spec: &RunSpec, index: u32) -> BTreeMap<(OpKind, u32), ChosenFault> {
    let mut chosen = BTreeMap::new();
    for event in &spec.events {
        if let FaultEvent::CallFault {
            replica,
            op,
            nth,
            outcome,
            request_delay_ms,
            reply_delay_ms,
        } = event
            && *replica == index
        {
            let fault = ChosenFault {
                outcome: *outcome,
                request_delay_ms: *request_delay_ms,
                reply_delay_ms: *reply_delay_ms,
            };
            chosen.insert((*op, *nth), fault);
        }
    }
    chosen
}

/// No fault of any kind: no knob, no event, no skew.
fn faults_off(spec: &RunSpec) -> bool {
    !spec.faults.any() && spec.events.is_empty() && spec.skews_ms.iter().all(|skew| *skew == 0)
}

/// Whether a fault-free run is long enough that the backlog must be gone:
/// one term per `term_interval + jitter` clears `term_row_cap` rows.
fn drain_owed(spec: &RunSpec) -> bool {
    let w = &spec.worker;
    let rows = u64::from(spec.backlog_rows) + u64::from(spec.boundary_rows);
    let terms = rows.div_ceil(u64::from(w.term_row_cap)) + 1;
    let needed_ms = terms * (w.term_interval_ms + w.term_jitter_ms_max) + w.lease_ttl_ms;
    faults_off(spec) && spec.duration_ms >= needed_ms
}

struct Replica {
    ctx: Arc<ReplicaCtx>,
    node: NodeHandle,
}

async fn simulate(spec: RunSpec, factory: Arc<dyn WorkerFactory>, record: bool) -> History {
    let handle = Handle::current();
    let clock = SimClock::new(0);
    let recorder = Arc::new(Recorder::new(clock, record));
    let mut plan_rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let retention_ms = i64::try_from(spec.worker.retention_ms).expect("validated");

    let rows = Arc::new(Mutex::new(seed_rows(&spec, &mut plan_rng)));
    let initial_rows = rows.lock().expect("rows").len() as u64;
    let leases = Arc::new(Mutex::new(LeaseTable::new(spec.worker.lease_ttl_ms)));
    let inserted = Arc::new(AtomicU64::new(0));
    let service_nodes = start_services(&handle, &spec, &leases, &rows, &recorder, &inserted);

    let skew_max = i64::try_from(spec.faults.clock_skew_ms_max).unwrap_or(i64::MAX);
    let next_call = Arc::new(AtomicU64::new(0));
    let mut skews_ms = Vec::new();
    let mut replicas = Vec::new();
    for index in 1..=spec.replicas {
        let drawn_ms = if skew_max > 0 {
            plan_rng.gen_range(-skew_max..=skew_max)
        } else {
            0
        };
        let skew_ms = spec
            .skews_ms
            .get(index as usize - 1)
            .copied()
            .unwrap_or(drawn_ms);
        skews_ms.push(skew_ms);
        let stop_triggers = spec
            .events
            .iter()
            .filter_map(|event| match event {
                FaultEvent::StopDuring {
                    replica,
                    op,
                    nth,
                    callers,
                } if *replica == index => Some((*op, *nth, *callers)),
                _ => None,
            })
            .collect();
        let ctx = Arc::new(ReplicaCtx {
            replica: index,
            recorder: recorder.clone(),
            faults: spec.faults.clone(),
            rpc_timeout_ms: spec.rpc_timeout_ms,
            renew_interval_ms: spec.worker.renew_interval_ms,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(plan_rng.r#gen())),
            next_call: next_call.clone(),
            term: AtomicU32::new(0),
            calls_by_op: Mutex::default(),
            stop_triggers,
            call_faults: chosen_faults(&spec, index),
            worker: Mutex::new(None),
            node: Mutex::new(None),
            alive: AtomicBool::new(true),
            stop_callers: AtomicU32::new(0),
            stops_pending: AtomicU32::new(0),
            stops_deferred: AtomicU32::new(0),
        });
        let node = start_replica(
            &handle,
            &ctx,
            &factory,
            clock.skewed(skew_ms),
            &spec,
            plan_rng.r#gen(),
        );
        *ctx.node.lock().expect("node slot") = Some(node.id());
        replicas.push(Replica { ctx, node });
    }

    let header = Header {
        seed: spec.seed,
        replicas: spec.replicas,
        retention_ms: spec.worker.retention_ms,
        batch_size: spec.worker.batch_size,
        term_row_cap: spec.worker.term_row_cap,
        skews_ms,
        initial_rows,
        faults_off: faults_off(&spec),
        drain_owed: drain_owed(&spec),
        stop_bound_ms: stop_bound_ms(&spec),
    };

    let replicas = Arc::new(replicas);
    // Fault tasks live on a node of their own, killed with the rest at the
    // end: a task still sleeping when the runtime ends would never be freed.
    let faults_node = handle.create_node().name("faults").build();
    for event in spec.events.clone() {
        let (handle, replicas, recorder) = (handle.clone(), replicas.clone(), recorder.clone());
        faults_node.spawn(async move { inject(&handle, &replicas, &recorder, event).await });
    }

    madsim::time::sleep(Duration::from_millis(spec.duration_ms)).await;
    for replica in replicas.iter() {
        replica.ctx.spawn_stops(1);
    }
    settle_stops(&replicas, &recorder, header.stop_bound_ms).await;

    let end_ms = recorder.now_ms();
    let grace_ms = spec.worker.term_interval_ms
        + spec.worker.term_jitter_ms_max
        + spec.worker.lease_ttl_ms
        + spec.worker.renew_interval_ms;
    let stale_before_ms = end_ms - retention_ms - i64::try_from(grace_ms).unwrap_or(i64::MAX);
    let (rows_left, stale_rows_left) = {
        let rows = rows.lock().expect("rows");
        (
            rows.len() as u64,
            rows.count_older_than(stale_before_ms) as u64,
        )
    };
    let rows_inserted = inserted.load(Ordering::Relaxed);
    recorder.record(
        Actor::World,
        0,
        EventKind::Final {
            rows_left,
            rows_inserted,
            stale_rows_left,
        },
    );

    // Free every task before the runtime ends (MADSIM-NOTES, trap 4).
    let replica_nodes = replicas.iter().map(|r| &r.node);
    for node in service_nodes
        .iter()
        .chain(replica_nodes)
        .chain([&faults_node])
    {
        handle.kill(node.id());
    }
    madsim::time::sleep(Duration::from_millis(1)).await;
    for replica in replicas.iter() {
        // The worker's ports point back at the context: break the cycle.
        replica.ctx.worker.lock().expect("worker slot").take();
    }
    History {
        header,
        events: recorder.take(),
    }
}

/// The backlog lies before the first cutoff; boundary rows straddle it over
/// the next minute, so later terms find newly eligible rows.
fn seed_rows(spec: &RunSpec, rng: &mut ChaCha8Rng) -> RecordTable {
    let retention_ms = i64::try_from(spec.worker.retention_ms).expect("validated");
    let mut rows = RecordTable::new();
    for _ in 0..spec.backlog_rows {
        rows.insert(-retention_ms - rng.gen_range(1..=600_000));
    }
    for _ in 0..spec.boundary_rows {
        rows.insert(-retention_ms + rng.gen_range(0..60_000));
    }
    rows
}

fn start_services(
    handle: &Handle,
    spec: &RunSpec,
    leases: &Arc<Mutex<LeaseTable>>,
    rows: &Arc<Mutex<RecordTable>>,
    recorder: &Arc<Recorder>,
    inserted: &Arc<AtomicU64>,
) -> Vec<NodeHandle> {
    let (table, log) = (leases.clone(), recorder.clone());
    let lease_node = handle
        .create_node()
        .name("lease")
        .ip(ip(0, 1))
        .init(move || lease_service(table.clone(), log.clone()))
        .build();
    let (table, rows, log) = (leases.clone(), rows.clone(), recorder.clone());
    let (arrivals, inserted) = (spec.arrivals_per_sec, inserted.clone());
    let batch_ms = spec.db_batch_ms_min..=spec.db_batch_ms_max;
    let work_seed = spec.seed ^ 0xDB;
    let db_node = handle
        .create_node()
        .name("db")
        .ip(ip(0, 2))
        .init(move || {
            let (table, rows, log, inserted) =
                (table.clone(), rows.clone(), log.clone(), inserted.clone());
            database(
                table,
                rows,
                log,
                arrivals,
                inserted,
                batch_ms.clone(),
                work_seed,
            )
        })
        .build();
    vec![lease_node, db_node]
}

fn start_replica(
    handle: &Handle,
    ctx: &Arc<ReplicaCtx>,
    factory: &Arc<dyn WorkerFactory>,
    clock: SimClock,
    spec: &RunSpec,
    jitter_seed: u64,
) -> NodeHandle {
    let (ctx, config, factory) = (ctx.clone(), spec.worker.config(), factory.clone());
    let restarts = Arc::new(AtomicU32::new(0));
    let index = ctx.replica;
    handle
        .create_node()
        .name(format!("r{index}"))
        .ip(ip(1, u8::try_from(index).expect("1..=5")))
        .init(move || {
            let incarnation = restarts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let seed = jitter_seed ^ u64::from(incarnation).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            replica_process(ctx.clone(), factory.clone(), clock, config.clone(), seed)
        })
        .build()
}

fn ip(subnet: u8, host: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, subnet, host))
}

async fn inject(handle: &Handle, replicas: &[Replica], recorder: &Recorder, event: FaultEvent) {
    let sleep_until = |at_ms: u64| {
        let wait_ms = u64::try_from(i64::try_from(at_ms).unwrap_or(i64::MAX) - recorder.now_ms())
            .unwrap_or(0);
        madsim::time::sleep(Duration::from_millis(wait_ms))
    };
    let replica = &replicas[event.replica() as usize - 1];
    let actor = Actor::Replica(replica.ctx.replica);
    let term = || replica.ctx.term.load(std::sync::atomic::Ordering::Relaxed);
    match event {
        FaultEvent::Pause { at_ms, for_ms, .. } => {
            sleep_until(at_ms).await;
            recorder.record(actor, term(), EventKind::Paused { for_ms });
            handle.pause(replica.node.id());
            madsim::time::sleep(Duration::from_millis(for_ms)).await;
            handle.resume(replica.node.id());
            recorder.record(actor, term(), EventKind::Resumed);
        }
        FaultEvent::Crash {
            at_ms,
            restart_after_ms,
            ..
        } => {
            sleep_until(at_ms).await;
            recorder.record(actor, term(), EventKind::Crashed);
            replica.ctx.alive.store(false, Ordering::Relaxed);
            replica.ctx.stops_pending.store(0, Ordering::Relaxed);
            replica.ctx.worker.lock().expect("worker slot").take();
            handle.kill(replica.node.id());
            madsim::time::sleep(Duration::from_millis(restart_after_ms)).await;
            recorder.record(actor, term(), EventKind::Restarted);
            replica.ctx.alive.store(true, Ordering::Relaxed);
            replica.ctx.stops_pending.store(0, Ordering::Relaxed);
            replica.ctx.worker.lock().expect("worker slot").take();
            handle.restart(replica.node.id());
        }
        FaultEvent::Stop { at_ms, callers, .. } => {
            sleep_until(at_ms).await;
            replica.ctx.spawn_stops(callers);
        }
        FaultEvent::StopDuring { .. } | FaultEvent::CallFault { .. } => {}
    }
}

/// Waits until every `stop()` spawned so far has resolved, or the bound.
async fn settle_stops(replicas: &[Replica], recorder: &Recorder, bound_ms: u64) {
    let deadline_ms = recorder.now_ms() + i64::try_from(bound_ms).unwrap_or(i64::MAX);
    let pending = || {
        replicas
            .iter()
            .filter(|r| r.ctx.alive.load(Ordering::Relaxed))
            .map(|r| r.ctx.stops_pending.load(Ordering::Relaxed))
            .sum::<u32>()
    };
    while pending() > 0 && recorder.now_ms() < deadline_ms {
        madsim::time::sleep(Duration::from_millis(10)).await;
    }
}
