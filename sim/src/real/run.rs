//! One plan ([`RunSpec`]) run in real mode: its replicas, settings, rows,
//! arrivals, fault knobs and timed events applied to the production worker
//! and adapters against a fresh database, and the history it leaves.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use retention_worker::pg::{PgLeaseService, PgOptions, PgRecords, Pool};
use test_support::{MeteredProxy, TempServer};

use super::db_clock;
use super::gate::InFlight;
use super::log::{RealRecorder, wall_us};
use super::real_target::{RealTarget, sleep_until};
use super::replica_lifecycle::{Replica, Shared};
use super::server_events::{add_server_events, settle};
use super::staging::pg_options;
pub use super::staging::{not_applied, refusal};
use super::unheard;
use crate::model::{Actor, Event, EventKind, History, RunSpec, WorkerUnderTest};
use crate::plan::{RunDraws, in_turns, strike_in_turn};

/// The delay of each message between a worker and the server, either
/// way: madsim's default network latency, which the simulator runs on.
pub const NETWORK_MS_MIN: u64 = 1;
/// See [`NETWORK_MS_MIN`].
pub const NETWORK_MS_MAX: u64 = 10;

/// What a real run of a plan left: its history (with its `Final` event)
/// and the database's own audit of every row it deleted.
pub struct RealRun {
    /// The history, judged as a simulated one is.
    pub history: History,
    /// The database's account of the deletes.
    pub audit: db_clock::Audit,
    /// Effects that committed with no reply saying so (their adapter gave
    /// up after `COMMIT` left), recorded from the database's audits.
    pub unheard_effects: usize,
}

/// Runs `spec` against a fresh database `name` on `server`.
pub async fn run_plan(server: &TempServer, spec: &RunSpec, name: &str) -> RealRun {
    let replicas = spec.replicas;
    // The harness's own sessions (rows, arrivals, held rows, clock steps,
    // counts) carry no bounds; the workers' carry the plan's, as the
    // runner's sessions carry its flags'.
    drop(server.database(name, 1).await);
    // 0 turns each bound off: another client holding rows for 6 s must
    // not be cut by a 5 s idle-in-transaction bound the plan never set.
    let unbounded = PgOptions {
        statement_timeout_ms: 0,
        lock_timeout_ms: 0,
        idle_in_transaction_timeout_ms: 0,
        ..PgOptions::default()
    };
    let pool = server.pool(name, 6, &unbounded);
    db_clock::install(&pool).await;
    db_clock::set_delete_work(&pool, spec).await;
    let log = Arc::new(RealRecorder::for_calls_up_to(
        spec.rpc_timeout_ms + spec.db_batch_ms_max,
    ));
    let plan = RunDraws::draw(spec);
    let initial_rows = seed_rows(&pool, &plan.rows_ms, log.epoch_ms).await;
    let options = pg_options(spec);
    // Each replica reaches the server over a network of its own, as slow
    // as the simulator's (madsim's 1-10 ms a message), not loopback's
    // microseconds, and cut off when the plan says.
    let networks: Vec<MeteredProxy> = (1..=replicas)
        .map(|index| {
            // Replica 1's network draws what the single proxy drew before.
            let seed = spec.seed ^ u64::from(index - 1).wrapping_mul(0xA24B_AED4_963E_E407);
            let network =
                MeteredProxy::with_latency(server.port(), NETWORK_MS_MIN, NETWORK_MS_MAX, seed);
            // The adapter bounds a cancel by the call's timeout, as the
            // simulator's kernel does.
            network.cancels_give_up_after_ms(spec.rpc_timeout_ms);
            network
        })
        .collect();
    let workers_pool = |index: u32| {
        let network = &networks[index as usize - 1];
        server.pool_via(network.port(), name, &format!("r{index}"), 3, &options)
    };
    let shared = Shared {
        log: log.clone(),
        next_call: Arc::new(AtomicU64::new(0)),
        in_flight: Arc::new(InFlight::default()),
        leases: PgLeaseService::new(workers_pool(1), options.clone()),
        records: PgRecords::new(workers_pool(1), options.clone()),
        worker: WorkerUnderTest::of(spec),
        call_timeout_ms: spec.rpc_timeout_ms,
    };
    let skews_ms = plan.skews_ms();
    let mut members = Vec::new();
    for replica_plan in plan.replicas {
        let (index, skew_ms) = (replica_plan.index, replica_plan.skew_ms);
        let pool = workers_pool(index);
        let own = Shared {
            leases: PgLeaseService::new(pool.clone(), options.clone()),
            records: PgRecords::new(pool, options.clone()),
            ..shared.clone()
        };
        let replica = Replica::new(replica_plan, &own);
        replica.clock_offset_ms.store(skew_ms, Ordering::SeqCst);
        members.push(replica);
    }
    let config = spec.worker.config();
    // The timed events are spawned before the workers, so that on the
    // one thread the run takes one at 0 ms (a replica frozen from the
    // start) strikes before any worker's first step, as in the simulator.
    let target = Arc::new(RealTarget {
        networks: networks.clone(),
        replicas: members.clone(),
        pool: pool.clone(),
        log: log.clone(),
        config: config.clone(),
    });
    // No task to keep for a dropped fault on real time: it is left out.
    let striking = (spec.striking_events().into_iter())
        .filter_map(|(event, dropped)| (!dropped).then_some(event))
        .collect();
    let schedule: Vec<_> = in_turns(striking)
        .into_iter()
        .map(|(event, turn)| {
            let target = target.clone();
            tokio::spawn(async move { strike_in_turn(&*target, event, turn).await })
        })
        .collect();
    for replica in &members {
        replica.start(config.clone());
    }
    let arrivals_done = Arc::new(AtomicBool::new(false));
    let inserter = tokio::spawn(insert_arrivals(
        pool.clone(),
        log.clone(),
        spec.arrivals_per_sec,
        arrivals_done.clone(),
    ));

    sleep_until(&log, spec.duration_ms).await;
    for task in &schedule {
        task.abort();
    }
    // A pause the end cut short thaws: its network must not stay frozen
    // for ever (the simulator's pause runs out on its own).
    for network in &networks {
        network.thaw();
    }
    let stops: Vec<_> = members
        .iter()
        .map(|replica| {
            let replica = replica.clone();
            tokio::spawn(async move {
                let _alone = replica.lifecycle.lock().await;
                replica.stop(1).await;
            })
        })
        .collect();
    let bound = Duration::from_millis(spec.stop_bound_ms());
    let _ = tokio::time::timeout(bound, futures_util::future::join_all(stops)).await;
    shared.in_flight.drained().await;
    arrivals_done.store(true, Ordering::SeqCst);
    let arrived = inserter.await.expect("the inserter panicked");
    let end_ms = wall_us() / 1_000;
    settle(spec, &pool).await;
    let unheard_effects = unheard::record_unheard(&pool, &log).await;
    let ending = Ending {
        end_ms,
        skews_ms,
        initial_rows,
        unheard_effects,
    };
    let mut run = finish(spec, &pool, &log, ending, &arrived).await;
    add_server_events(server, name, spec, &pool, &log, &mut run.history).await;
    run
}

/// Inserts the plan's seeded rows (`rows_ms` from the run's start, drawn
/// as the simulator draws them).
async fn seed_rows(pool: &Pool, rows_ms: &[i64], epoch_ms: i64) -> u64 {
    let stamps: Vec<i64> = rows_ms.iter().map(|at| at + epoch_ms).collect();
    let client = pool.get().await.expect("a connection");
    client
        .execute(
            "INSERT INTO retention_records (created_at_ms) SELECT unnest($1::bigint[])",
            &[&stamps],
        )
        .await
        .expect("seed the rows");
    stamps.len() as u64
}

/// Writes a row at the database's "now" `per_sec` times a second until
/// told to stop; returns each row's id and the true instant (wall-clock
/// ms) it was written at, which a stepped database clock hides.
async fn insert_arrivals(
    pool: Pool,
    log: Arc<RealRecorder>,
    per_sec: u32,
    until: Arc<AtomicBool>,
) -> BTreeMap<i64, i64> {
    let mut written = BTreeMap::new();
    if per_sec == 0 {
        return written;
    }
    let client = pool.get().await.expect("a connection");
    while !until.load(Ordering::SeqCst) {
        let row = client
            .query_one(
                "INSERT INTO retention_records (created_at_ms)
                 VALUES (retention_now_us() / 1000) RETURNING id, created_at_ms",
                &[],
            )
            .await
            .expect("write an arriving row");
        let (id, created_at_ms): (i64, i64) = (row.get(0), row.get(1));
        let true_ms = log.db_to_wall_us(created_at_ms * 1_000).div_euclid(1_000);
        written.insert(id, true_ms);
        tokio::time::sleep(Duration::from_millis(1_000 / u64::from(per_sec))).await;
    }
    written
}

/// What the end of a run needs to know of its start and its end.
struct Ending {
    /// When the workers were stopped and the arrivals ended (wall clock).
    end_ms: i64,
    /// The replicas' clock skews.
    skews_ms: Vec<i64>,
    /// Rows seeded before the start.
    initial_rows: u64,
    /// Effects recorded from the audits (`unheard.rs`).
    unheard_effects: usize,
}

/// The history with its `Final` event, as the simulator writes it.
async fn finish(
    spec: &RunSpec,
    pool: &Pool,
    log: &RealRecorder,
    ending: Ending,
    arrived: &BTreeMap<i64, i64>,
) -> RealRun {
    let Ending {
        end_ms,
        skews_ms,
        initial_rows,
        unheard_effects,
    } = ending;
    let count = |sql: &'static str, bound: Option<i64>| async move {
        let client = pool.get().await.expect("a connection");
        let row = match bound {
            Some(bound) => client.query_one(sql, &[&bound]).await,
            None => client.query_one(sql, &[]).await,
        };
        u64::try_from(row.expect("count the rows").get::<_, i64>(0)).expect("a count")
    };
    let rows_left = count("SELECT count(*) FROM retention_records", None).await;
    let w = &spec.worker;
    let grace_ms = w.term_interval_ms + w.term_jitter_ms_max + w.lease_ttl_ms + w.renew_interval_ms;
    let retention_ms = i64::try_from(w.retention_ms).expect("validated");
    let stale_before_ms = end_ms - retention_ms - i64::try_from(grace_ms).unwrap_or(i64::MAX);
    let stale_rows_left = count(
        "SELECT count(*) FROM retention_records WHERE created_at_ms < $1",
        Some(stale_before_ms),
    )
    .await;
    // Seeded rows were stamped while the database's clock kept true time.
    let audit = db_clock::audit(pool, w.retention_ms, |id, created_at_ms| {
        arrived.get(&id).copied().unwrap_or(created_at_ms)
    })
    .await;
    let mut history = log.history(spec.header(skews_ms, initial_rows));
    history.events.push(Event {
        at_ms: end_ms - log.epoch_ms,
        actor: Actor::World,
        term: 0,
        kind: EventKind::Final {
            rows_left,
            rows_inserted: arrived.len() as u64,
            stale_rows_left,
            rows_early_by_true_time: audit.early_by_true_time,
        },
    });
    RealRun {
        history,
        audit,
        unheard_effects,
    }
}
