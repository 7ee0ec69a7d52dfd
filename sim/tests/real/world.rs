//! The real-mode run: a migrated database with its rows, three replicas
//! serving, the fault schedule, and the phases the test walks through
//! (faults, a frozen mid-run count, a fault-free drain, the final tally).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use retention_sim::model::{Actor, EventKind, FaultConfig, Header, History, TermEndRec};
use retention_worker::WorkerConfig;
use retention_worker::pg::{PgLeaseService, PgOptions, PgRecords, Pool};
use tokio::task::JoinHandle;

use retention_sim::real::gate::InFlight;
use retention_sim::real::log::{Log, wall_us};
use retention_sim::real::replica::{Replica, Shared};
use test_support::TempServer;

pub const REPLICAS: u32 = 3;
const RETENTION_MS: u64 = 3_000;
/// How far a replica's wall clock is stepped ahead (then twice that back).
const CLOCK_STEP_MS: i64 = 1_200;
/// How far the database's clock is stepped ahead at a failover (past the
/// TTL: every lease expires at once), then back at a second one (twice
/// that: leases last longer, and rows must wait on the new clock).
const DB_CLOCK_STEP_MS: i64 = 2_000;
const LEASE_TTL_MS: u64 = 1_500;
const CALL_TIMEOUT_MS: u64 = 2_000;
const PAUSE_MS: u64 = LEASE_TTL_MS + 700;
/// How long every replica is frozen while the table is counted mid-run.
const FREEZE_MS: u64 = 200;
pub const FAULTY_MS: u64 = 8_000;
const DRAIN_DEADLINE_MS: u64 = 30_000;
const BACKLOG_ROWS: i64 = 6_000;
const BOUNDARY_ROWS: i64 = 300;
const ARRIVALS_PER_SEC: u64 = 20;

fn worker_config() -> WorkerConfig {
    let mut config = WorkerConfig::default();
    config.retention_ms = RETENTION_MS;
    config.lease_ttl_ms = LEASE_TTL_MS;
    config.renew_interval_ms = 150;
    config.expiry_margin_ms = 300;
    config.term_interval_ms = 150;
    config.loss_backoff_ms = 400;
    config.term_jitter_ms_max = 100;
    config
}

fn now_ms() -> i64 {
    wall_us() / 1_000
}

async fn count(
    pool: &Pool,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> i64 {
    pool.get()
        .await
        .unwrap()
        .query_one(sql, params)
        .await
        .unwrap()
        .get(0)
}

/// Rows already past retention, rows that cross it during the first
/// seconds, and (from `insert_arrivals`) rows arriving as the run goes.
async fn seed_rows(pool: &Pool, start_ms: i64) -> u64 {
    let retention = i64::try_from(RETENTION_MS).unwrap();
    let client = pool.get().await.unwrap();
    client
        .execute(
            "INSERT INTO retention_records (created_at_ms)
             SELECT $1 - g * 10 FROM generate_series(1, $2::bigint) g ORDER BY 1",
            &[&(start_ms - retention), &BACKLOG_ROWS],
        )
        .await
        .unwrap();
    client
        .execute(
            "INSERT INTO retention_records (created_at_ms)
             SELECT $1 + g * 10 FROM generate_series(0, $2::bigint - 1) g",
            &[&(start_ms - retention), &BOUNDARY_ROWS],
        )
        .await
        .unwrap();
    u64::try_from(BACKLOG_ROWS + BOUNDARY_ROWS).unwrap()
}

/// A row written during the run.
pub struct Arrival {
    pub id: i64,
    /// Stamped by the database's clock, as a column default would.
    pub created_at_ms: i64,
    /// The wall clock's instant of the write (ms since the Unix epoch).
    pub written_true_ms: i64,
}

/// Writes a row at the database's "now" every `1/ARRIVALS_PER_SEC` s until
/// told to stop; returns every row written.
pub async fn insert_arrivals(pool: Pool, log: Arc<Log>, until: Arc<AtomicBool>) -> Vec<Arrival> {
    let client = pool.get().await.unwrap();
    let mut written = Vec::new();
    while !until.load(Ordering::SeqCst) {
        let row = client
            .query_one(
                "INSERT INTO retention_records (created_at_ms)
                 VALUES (retention_now_us() / 1000) RETURNING id, created_at_ms",
                &[],
            )
            .await
            .unwrap();
        let (id, created_at_ms): (i64, i64) = (row.get(0), row.get(1));
        let written_true_ms = log.db_to_wall_us(created_at_ms * 1_000).div_euclid(1_000);
        written.push(Arrival {
            id,
            created_at_ms,
            written_true_ms,
        });
        tokio::time::sleep(Duration::from_millis(1_000 / ARRIVALS_PER_SEC)).await;
    }
    written
}

/// The last term that ended `Completed`, with its cutoff (absolute ms).
fn last_completed_cutoff(history: &History, epoch_ms: i64) -> Option<i64> {
    let mut cutoff_by_replica = std::collections::BTreeMap::new();
    let mut last = None;
    for event in &history.events {
        match (&event.kind, event.actor) {
            (
                EventKind::Invoke {
                    invocation: retention_sim::model::Invocation::Delete { older_than_ms, .. },
                    ..
                },
                actor,
            ) => {
                cutoff_by_replica.insert(actor, *older_than_ms);
            }
            (EventKind::TermEnded { end, .. }, actor) if *end == TermEndRec::Completed => {
                last = cutoff_by_replica
                    .get(&actor)
                    .map(|cutoff| cutoff + epoch_ms);
            }
            _ => {}
        }
    }
    last
}

/// One real-mode run: the database, the log, the replicas.
pub struct Run {
    pub seed: u64,
    pub pool: Pool,
    pub log: Arc<Log>,
    pub shared: Shared,
    pub replicas: Vec<Arc<Replica>>,
    pub initial_rows: u64,
}

impl Run {
    /// A migrated database with its rows, and three replicas serving.
    pub async fn start(server: &TempServer, seed: u64, plan: &mut ChaCha8Rng) -> Self {
        let pool = server.database("real_mode", 12).await;
        retention_sim::real::db_clock::install(&pool).await;
        let log = Arc::new(Log::new());
        let initial_rows = seed_rows(&pool, log.epoch_ms).await;
        // As the runner sets them: the retention enforced a second time
        // on the database's clock.
        let options = PgOptions {
            lease_ttl_ms: LEASE_TTL_MS,
            call_timeout_ms: CALL_TIMEOUT_MS,
            retention_ms: RETENTION_MS,
            ..PgOptions::default()
        };
        let shared = Shared {
            log: log.clone(),
            faults: FaultConfig {
                latency_ms_max: 60,
                reject_permille: 30,
                ambiguous_permille: 30,
                null_renew_permille: 40,
                renew_reply_delay_permille: 100,
                ..FaultConfig::default()
            },
            events: Vec::new(),
            forced_faults: true,
            variant: None,
            call_timeout_ms: CALL_TIMEOUT_MS,
            faults_on: Arc::new(AtomicBool::new(true)),
            renew_interval_ms: worker_config().renew_interval_ms,
            next_call: Arc::new(AtomicU64::new(0)),
            in_flight: Arc::new(InFlight::default()),
            leases: PgLeaseService::new(pool.clone(), options.clone()),
            records: PgRecords::new(pool.clone(), options),
        };
        let replicas: Vec<Arc<Replica>> = (1..=REPLICAS)
            .map(|i| Replica::new(i, seed ^ u64::from(i) << 32, &shared))
            .collect();
        for replica in &replicas {
            replica.start(worker_config(), plan.r#gen());
        }
        Self {
            seed,
            pool,
            log,
            shared,
            replicas,
            initial_rows,
        }
    }

    fn history(&self) -> History {
        self.log.history(header(self.seed, self.initial_rows))
    }

    /// The pause, the kill and the stops, at instants drawn from `plan`.
    pub fn schedule_faults(&self, plan: &mut ChaCha8Rng) -> Vec<JoinHandle<()>> {
        let pause_at_ms = plan.gen_range(1_000..5_000);
        let kill_at_ms = plan.gen_range(2_000..6_000);
        let stop_at_ms = [plan.gen_range(500..7_000), plan.gen_range(500..7_000)];
        let stop_victims = [plan.gen_range(0..REPLICAS), plan.gen_range(0..REPLICAS)];
        let stop_callers = [plan.gen_range(1..=3), plan.gen_range(1..=3)];
        let mut schedule = Vec::new();
        let replicas = self.replicas.clone();
        schedule.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(pause_at_ms)).await;
            // A GC pause mid-term: the leader freezes past its TTL.
            leader(&replicas).await.pause(PAUSE_MS).await;
        }));
        let (replicas, jitter_seed) = (self.replicas.clone(), plan.r#gen());
        schedule.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(kill_at_ms)).await;
            let victim = leader(&replicas).await;
            let _alone = victim.lifecycle.lock().await;
            victim.kill().await;
            tokio::time::sleep(Duration::from_millis(800)).await;
            victim.record_restart();
            victim.start(worker_config(), jitter_seed);
        }));
        // A host's wall clock stepped ahead, then back past where it was.
        let (stepped, step_at_ms) = (plan.gen_range(0..REPLICAS), plan.gen_range(500..4_000));
        let stepped = self.replicas[stepped as usize].clone();
        schedule.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(step_at_ms)).await;
            stepped.step_clock(CLOCK_STEP_MS);
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            stepped.step_clock(-2 * CLOCK_STEP_MS);
        }));
        for i in 0..2 {
            let victim = self.replicas[stop_victims[i] as usize].clone();
            let (at_ms, callers, jitter_seed) = (stop_at_ms[i], stop_callers[i], plan.r#gen());
            schedule.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(at_ms)).await;
                let _alone = victim.lifecycle.lock().await;
                victim.stop(callers).await;
                // Redeployed: a fresh process with a fresh worker.
                tokio::time::sleep(Duration::from_millis(300)).await;
                victim.record_restart();
                victim.start(worker_config(), jitter_seed);
            }));
        }
        // Failovers to database hosts whose clocks differ: one ahead, then
        // one behind where the first host's clock would have been.
        let db_step_at_ms = plan.gen_range(1_000..4_000);
        let (pool, log) = (self.pool.clone(), self.log.clone());
        schedule.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(db_step_at_ms)).await;
            retention_sim::real::db_clock::step(&pool, &log, DB_CLOCK_STEP_MS).await;
            tokio::time::sleep(Duration::from_millis(2_000)).await;
            retention_sim::real::db_clock::step(&pool, &log, -2 * DB_CLOCK_STEP_MS).await;
        }));
        schedule
    }

    /// Nothing written at or after the newest cutoff any delete used may be
    /// gone. Every replica is frozen (recorded as a pause) so no delete is
    /// in flight while the table is counted.
    pub async fn check_newer_rows_kept(&self, arrived: &[Arrival]) {
        let (seed, start_ms) = (self.seed, self.log.epoch_ms);
        let frozen: Vec<_> = self.replicas.iter().map(|r| r.freeze(FREEZE_MS)).collect();
        self.shared.in_flight.drained().await;
        let newest_cutoff = self
            .history()
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Deleted { older_than_ms, .. } => Some(older_than_ms + start_ms),
                _ => None,
            })
            .max()
            .expect("the faulty phase deleted something");
        let retention = i64::try_from(RETENTION_MS).unwrap();
        let boundary = (0..BOUNDARY_ROWS).map(|g| start_ms - retention + g * 10);
        let newer_written = boundary
            .chain(arrived.iter().map(|row| row.created_at_ms))
            .filter(|at| *at >= newest_cutoff)
            .count();
        let sql = "SELECT count(*) FROM retention_records WHERE created_at_ms >= $1";
        let newer_kept = count(&self.pool, sql, &[&newest_cutoff]).await;
        assert_eq!(
            usize::try_from(newer_kept).unwrap(),
            newer_written,
            "seed {seed}: rows written at or after cutoff {newest_cutoff}, the newest any delete used, went missing"
        );
        for (replica, gate) in self.replicas.iter().zip(&frozen) {
            replica.thaw(gate);
        }
    }

    /// Runs on without faults until a term completes with a cutoff past
    /// every row written.
    pub async fn drain(&self) {
        let sql = "SELECT coalesce(max(created_at_ms), 0) FROM retention_records";
        let last_written_ms = count(&self.pool, sql, &[]).await;
        let deadline = now_ms() + i64::try_from(DRAIN_DEADLINE_MS).unwrap();
        while last_completed_cutoff(&self.history(), self.log.epoch_ms)
            .is_none_or(|cutoff| cutoff <= last_written_ms)
        {
            assert!(
                now_ms() < deadline,
                "seed {}: the backlog did not drain within {DRAIN_DEADLINE_MS} ms of the faults ending",
                self.seed
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The history with its `Final` event, and the database's own account:
    /// rows left, rows left older than the last completed term's cutoff,
    /// and the audit of every row deleted.
    pub async fn finish(&self, arrived: &[Arrival]) -> Tally {
        let start_ms = self.log.epoch_ms;
        let all = "SELECT count(*) FROM retention_records";
        let rows_left = u64::try_from(count(&self.pool, all, &[]).await).unwrap();
        let mut history = self.history();
        let cutoff = last_completed_cutoff(&history, start_ms).expect("a completed term");
        let stale = "SELECT count(*) FROM retention_records WHERE created_at_ms < $1";
        let stale_rows_left = u64::try_from(count(&self.pool, stale, &[&cutoff]).await).unwrap();
        // Rows seeded before the run were stamped while the database's
        // clock kept true time; arrivals know their own true instant.
        let true_by_id: std::collections::BTreeMap<i64, i64> = arrived
            .iter()
            .map(|row| (row.id, row.written_true_ms))
            .collect();
        let audit =
            retention_sim::real::db_clock::audit(&self.pool, RETENTION_MS, |id, created_at_ms| {
                true_by_id.get(&id).copied().unwrap_or(created_at_ms)
            })
            .await;
        history.events.push(retention_sim::model::Event {
            at_ms: now_ms() - start_ms,
            actor: Actor::World,
            term: 0,
            kind: EventKind::Final {
                rows_left,
                rows_inserted: arrived.len() as u64,
                stale_rows_left,
                rows_early_by_true_time: audit.early_by_true_time,
            },
        });
        Tally {
            history,
            rows_left,
            stale_rows_left,
            audit,
        }
    }
}

/// What a finished run leaves to judge.
pub struct Tally {
    pub history: History,
    pub rows_left: u64,
    pub stale_rows_left: u64,
    pub audit: retention_sim::real::db_clock::Audit,
}

/// The replica in a term now; waits up to a second for one (between terms
/// nobody leads), then settles for r1.
async fn leader(replicas: &[Arc<Replica>]) -> &Arc<Replica> {
    for _ in 0..100 {
        if let Some(leading) = replicas.iter().find(|r| r.leading.load(Ordering::SeqCst)) {
            return leading;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    &replicas[0]
}

fn header(seed: u64, initial_rows: u64) -> Header {
    let config = worker_config();
    Header {
        seed,
        replicas: REPLICAS,
        retention_ms: config.retention_ms,
        batch_size: config.batch_size,
        term_row_cap: config.term_row_cap,
        skews_ms: vec![0; REPLICAS as usize],
        initial_rows,
        faults_off: false,
        drain_owed: true,
        // Two calls in flight that run into their timeout, the release,
        // the pause, slack (the simulator's bound, with this run's figures).
        stop_bound_ms: 3 * CALL_TIMEOUT_MS + PAUSE_MS + 1_000,
        // The adapters' options are not this module's to read.
        lock_timeout_ms: 0,
    }
}
