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
use super::log::{Log, wall_us};
use super::replica::{Replica, Shared};
use super::server_log;
use crate::model::{Actor, Event, EventKind, FaultEvent, Flaw, History, RunSpec, WorkerUnderTest};
use crate::plan::RunDraws;

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
}

/// Why real mode will not run `spec` at all, if it will not.
pub fn refusal(spec: &RunSpec) -> Option<String> {
    match spec.flaw {
        Some(flaw @ Flaw::SpinWhileRenewing) => Some(format!(
            "the flaw {flaw} busy-waits without ever awaiting: on tokio it would hold the \
             runtime's thread, and the run, for ever (the simulator stops it as LIVE-3)"
        )),
        _ => None,
    }
}

/// The parts of a plan real mode cannot apply; the run goes on without
/// them, and says so.
pub fn not_applied(spec: &RunSpec) -> Vec<String> {
    let mut skipped = Vec::new();
    for (index, event) in spec.events.iter().enumerate() {
        let why = match event {
            FaultEvent::ClockRate { .. } => "a clock's rate cannot be changed under tokio's timers",
            FaultEvent::StallStandby { .. } => "the throwaway server has no standby",
            _ => continue,
        };
        skipped.push(format!("events[{index}] ({}): {why}", event_name(event)));
    }
    if spec.db_commit_ms_max > 0 {
        skipped.push(
            "db_commit_ms: the throwaway server commits without waiting for a flush \
             (fsync and synchronous_commit off)"
                .to_owned(),
        );
    }
    if spec.faults.packet_loss_permille > 0 {
        skipped
            .push("faults.packet_loss_permille: the proxy loses nothing (loopback TCP)".to_owned());
    }
    skipped
}

fn event_name(event: &FaultEvent) -> &'static str {
    match event {
        FaultEvent::Pause { .. } => "pause",
        FaultEvent::Partition { .. } => "partition",
        FaultEvent::Crash { .. } => "crash",
        FaultEvent::Stop { .. } => "stop",
        FaultEvent::CallFault { .. } => "call_fault",
        FaultEvent::HoldRows { .. } => "hold_rows",
        FaultEvent::StallStandby { .. } => "stall_standby",
        FaultEvent::ClockStep { .. } => "clock_step",
        FaultEvent::ClockRate { .. } => "clock_rate",
        FaultEvent::DbClockStep { .. } => "db_clock_step",
        FaultEvent::StopDuring { .. } => "stop_during",
    }
}

/// The adapters' options for this plan, as the runner would set them.
pub fn pg_options(spec: &RunSpec) -> PgOptions {
    PgOptions {
        lease_ttl_ms: spec.worker.lease_ttl_ms,
        call_timeout_ms: spec.rpc_timeout_ms,
        statement_timeout_ms: spec.statement_timeout_ms,
        lock_timeout_ms: spec.lock_timeout_ms,
        idle_in_transaction_timeout_ms: spec.idle_in_transaction_timeout_ms,
        // The flaws that stand for the reviewed design run without the
        // bound on the database's clock, as in the simulator.
        retention_ms: if spec.flaw.is_some_and(Flaw::drops_database_bound) {
            0
        } else {
            spec.worker.retention_ms
        },
        ..PgOptions::default()
    }
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
    let log = Arc::new(Log::for_calls_up_to(
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
    let schedule: Vec<_> = spec
        .effective_events()
        .into_iter()
        .map(|event| {
            let strike = Strike {
                event,
                networks: networks.clone(),
                replicas: members.clone(),
                pool: pool.clone(),
                log: log.clone(),
                config: config.clone(),
            };
            tokio::spawn(strike.run())
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
    let mut run = finish(spec, &pool, &log, skews_ms, initial_rows, &arrived).await;
    add_server_events(server, name, spec, &pool, &log, &mut run.history).await;
    run
}

/// Adds to `history` what the server did on its own during the run, as
/// its log tells it, each event in its place in time (the `Final` event
/// stays last).
async fn add_server_events(
    server: &TempServer,
    name: &str,
    spec: &RunSpec,
    pool: &Pool,
    log: &Log,
    history: &mut History,
) {
    let client = pool.get().await.expect("a connection");
    // A statement on a connection its client abandoned runs on to its
    // bound, and its end is logged only then: wait for every other
    // backend of this database to be idle or gone before reading the log.
    let settle_ms = spec
        .statement_timeout_ms
        .max(spec.rpc_timeout_ms)
        .saturating_add(spec.idle_in_transaction_timeout_ms)
        .saturating_add(1_000);
    let busy = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                AND pid <> pg_backend_pid() AND backend_type = 'client backend' \
                AND state IS DISTINCT FROM 'idle'";
    let deadline = std::time::Instant::now() + Duration::from_millis(settle_ms);
    while std::time::Instant::now() < deadline {
        let running: i64 = client
            .query_one(busy, &[])
            .await
            .expect("read pg_stat_activity")
            .get(0);
        if running == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = std::fs::read_to_string(server.log_path()).unwrap_or_default();
    let entries = server_log::parse(&text);
    let txns = server_log::delete_transactions(&entries);
    let rolled_back: Vec<i64> = client
        .query(
            "SELECT x FROM unnest($1::bigint[]) AS t(x) WHERE txid_status(x) = 'aborted'",
            &[&txns],
        )
        .await
        .expect("ask which deletes committed")
        .iter()
        .map(|row| row.get(0))
        .collect();
    let fin = history.events.pop().expect("the final event");
    let found = server_log::server_events(
        &entries,
        name,
        log.epoch_ms,
        &history.events,
        spec,
        &rolled_back,
    );
    history.events.extend(found);
    history.events.sort_by_key(|event| event.at_ms);
    history.events.push(fin);
}

async fn sleep_until(log: &Log, at_ms: u64) {
    let now_ms = wall_us() / 1_000 - log.epoch_ms;
    let wait_ms = i64::try_from(at_ms).unwrap_or(i64::MAX) - now_ms;
    // Never a zero sleep: it would yield, and an event due now must
    // strike before the tasks queued behind it run.
    if let Ok(wait_ms @ 1..) = u64::try_from(wait_ms) {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    }
}

/// One timed event of the plan, as it strikes.
struct Strike {
    event: FaultEvent,
    /// Each replica's network to the server.
    networks: Vec<MeteredProxy>,
    replicas: Vec<Arc<Replica>>,
    pool: Pool,
    log: Arc<Log>,
    config: retention_worker::WorkerConfig,
}

impl Strike {
    async fn run(self) {
        let replica = |index: u32| self.replicas[index as usize - 1].clone();
        match self.event {
            FaultEvent::Pause {
                replica: index,
                at_ms,
                for_ms,
            } => {
                sleep_until(&self.log, at_ms).await;
                // The adapters' tasks run on: what they would read or send
                // waits in the replica's network, as in a frozen process's
                // kernel, until the thaw.
                let network = &self.networks[index as usize - 1];
                network.freeze();
                replica(index).pause(for_ms).await;
                network.thaw();
            }
            FaultEvent::Partition {
                replica: index,
                at_ms,
                for_ms,
            } => {
                sleep_until(&self.log, at_ms).await;
                let victim = replica(index);
                victim.record(EventKind::Partitioned { for_ms });
                self.networks[index as usize - 1].cut(for_ms);
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
                victim.record(EventKind::Healed);
            }
            FaultEvent::Crash {
                replica: index,
                at_ms,
                restart_after_ms,
            } => {
                sleep_until(&self.log, at_ms).await;
                let victim = replica(index);
                let _alone = victim.lifecycle.lock().await;
                // A dead process's sockets close after what they had sent:
                // no COMMIT or ROLLBACK of its follows, and the server rolls
                // back its open transaction, as the simulator's kernel does.
                self.networks[index as usize - 1].sever();
                victim.kill().await;
                tokio::time::sleep(Duration::from_millis(restart_after_ms)).await;
                victim.record_restart();
                victim.start(self.config.clone());
            }
            FaultEvent::Stop {
                replica: index,
                at_ms,
                callers,
            } => {
                sleep_until(&self.log, at_ms).await;
                let victim = replica(index);
                let _alone = victim.lifecycle.lock().await;
                victim.stop(callers).await;
            }
            FaultEvent::ClockStep {
                replica: index,
                at_ms,
                delta_ms,
            } => {
                sleep_until(&self.log, at_ms).await;
                replica(index).step_clock(delta_ms);
            }
            FaultEvent::DbClockStep { at_ms, delta_ms } => {
                sleep_until(&self.log, at_ms).await;
                db_clock::step(&self.pool, &self.log, delta_ms).await;
            }
            FaultEvent::HoldRows {
                at_ms,
                for_ms,
                rows,
            } => {
                sleep_until(&self.log, at_ms).await;
                hold_rows(&self.pool, &self.log, rows, for_ms).await;
            }
            // Call faults strike through the replicas' draws, stops during
            // a call through their ports; the rest cannot be applied.
            FaultEvent::CallFault { .. }
            | FaultEvent::StopDuring { .. }
            | FaultEvent::ClockRate { .. }
            | FaultEvent::StallStandby { .. } => {}
        }
    }
}

/// Another client locks the `rows` oldest records `FOR UPDATE` for
/// `for_ms`, then commits.
async fn hold_rows(pool: &Pool, log: &Log, rows: u32, for_ms: u64) {
    let mut client = pool.get().await.expect("a connection");
    let txn = client.transaction().await.expect("BEGIN");
    let locked = txn
        .query(
            "SELECT id FROM retention_records ORDER BY created_at_ms, id LIMIT $1 FOR UPDATE",
            &[&i64::from(rows)],
        )
        .await
        .expect("lock the oldest rows")
        .len() as u64;
    log.record(
        Actor::Db,
        0,
        EventKind::RowsHeld {
            rows: locked,
            for_ms,
        },
    );
    tokio::time::sleep(Duration::from_millis(for_ms)).await;
    txn.commit().await.expect("COMMIT");
    log.record(Actor::Db, 0, EventKind::RowsFreed { rows: locked });
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
    log: Arc<Log>,
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

/// The history with its `Final` event, as the simulator writes it.
async fn finish(
    spec: &RunSpec,
    pool: &Pool,
    log: &Log,
    skews_ms: Vec<i64>,
    initial_rows: u64,
    arrived: &BTreeMap<i64, i64>,
) -> RealRun {
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
    let end_ms = wall_us() / 1_000;
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
    RealRun { history, audit }
}
