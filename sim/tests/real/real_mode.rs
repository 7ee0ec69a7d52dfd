//! Three worker replicas on tokio against PostgreSQL, with faults injected
//! around the production adapters (latency, rejected calls, lost replies,
//! revoked leases, late renewal replies, a pause past the TTL, a kill
//! mid-term, `stop()` at random instants), recorded in the simulator's
//! history format and judged by the simulator's checker. Then the database
//! itself is asked: nothing newer than a cutoff went, everything eligible
//! did once the run drained.
//!
//! The seed (`REAL_MODE_SEED`, default 1) fixes the fault draws and the
//! schedule of pauses, kills and stops; thread and network timing are real,
//! so two runs of a seed differ in interleaving. A failure prints the seed,
//! the violations with a timeline excerpt, and where the history was saved.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_sim::{Actor, EventKind, Header, History, Outcome, check, excerpt};
use retention_worker::WorkerConfig;
use retention_worker::pg::{PgLeaseService, PgOptions, PgRecords, Pool};

use crate::faults::{Faults, InFlight};
use crate::log::{Log, wall_us};
use crate::replica::{Replica, Shared};
use crate::server::TempServer;

const REPLICAS: u32 = 3;
const RETENTION_MS: u64 = 3_000;
const LEASE_TTL_MS: u64 = 1_500;
const CALL_TIMEOUT_MS: u64 = 2_000;
const PAUSE_MS: u64 = LEASE_TTL_MS + 700;
/// How long every replica is frozen while the table is counted mid-run.
const FREEZE_MS: u64 = 200;
const FAULTY_MS: u64 = 8_000;
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

/// Writes a row at "now" every `1/ARRIVALS_PER_SEC` s until told to stop;
/// returns every row's `created_at_ms`.
async fn insert_arrivals(pool: Pool, until: Arc<AtomicBool>) -> Vec<i64> {
    let client = pool.get().await.unwrap();
    let mut written = Vec::new();
    while !until.load(Ordering::SeqCst) {
        let at_ms = now_ms();
        client
            .execute(
                "INSERT INTO retention_records (created_at_ms) VALUES ($1)",
                &[&at_ms],
            )
            .await
            .unwrap();
        written.push(at_ms);
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
                    invocation: retention_sim::Invocation::Delete { older_than_ms, .. },
                    ..
                },
                actor,
            ) => {
                cutoff_by_replica.insert(actor, *older_than_ms);
            }
            (EventKind::TermEnded { end, .. }, actor) if end == "Completed" => {
                last = cutoff_by_replica
                    .get(&actor)
                    .map(|cutoff| cutoff + epoch_ms);
            }
            _ => {}
        }
    }
    last
}

#[test]
fn three_replicas_on_postgresql_keep_every_clause_under_faults() {
    let seed: u64 = std::env::var("REAL_MODE_SEED")
        .ok()
        .map_or(1, |s| s.parse().expect("REAL_MODE_SEED is a number"));
    let server = TempServer::start();
    // One thread, as in the simulator: a task runs undisturbed between its
    // awaits, so what a worker decides and what the log records about it
    // (a stop flag and the `StopCalled` event, a check of that flag and the
    // next call's invoke) are one step. With worker threads another task
    // could slip between the two, and the history would show an order that
    // never happened. The database, a separate process, stays as concurrent
    // as ever.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let pool = server.database("real_mode", 12).await;
        let log = Arc::new(Log::new());
        let start_ms = log.epoch_ms;
        let initial_rows = seed_rows(&pool, start_ms).await;
        let options = PgOptions { lease_ttl_ms: LEASE_TTL_MS, call_timeout_ms: CALL_TIMEOUT_MS, ..PgOptions::default() };
        let shared = Shared {
            log: log.clone(),
            faults: Arc::new(Faults {
                enabled: AtomicBool::new(true),
                latency_ms_max: 60,
                reject_permille: 30,
                ambiguous_permille: 30,
                revoke_permille: 40,
                late_renewal_permille: 100,
            }),
            next_call: Arc::new(AtomicU64::new(0)),
            in_flight: Arc::new(InFlight::default()),
            leases: PgLeaseService::new(pool.clone(), options.clone()),
            records: PgRecords::new(pool.clone(), options),
        };
        let replicas: Vec<Arc<Replica>> = (1..=REPLICAS).map(|i| Replica::new(i, seed, &shared)).collect();
        let mut plan = ChaCha8Rng::seed_from_u64(seed);
        for replica in &replicas {
            replica.start(worker_config(), plan.r#gen());
        }
        let arrivals_done = Arc::new(AtomicBool::new(false));
        let inserter = tokio::spawn(insert_arrivals(pool.clone(), arrivals_done.clone()));

        // The fault schedule, drawn from the seed.
        let pause_at_ms = plan.gen_range(1_000..5_000);
        let kill_at_ms = plan.gen_range(2_000..6_000);
        let stop_at_ms = [plan.gen_range(500..7_000), plan.gen_range(500..7_000)];
        let stop_victims = [plan.gen_range(0..REPLICAS) as usize, plan.gen_range(0..REPLICAS) as usize];
        let stop_callers = [plan.gen_range(1..=3), plan.gen_range(1..=3)];
        let mut schedule = Vec::new();
        {
            let replicas = replicas.clone();
            schedule.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(pause_at_ms)).await;
                // A GC pause mid-term: the leader freezes past its TTL.
                leader(&replicas).await.pause(PAUSE_MS).await;
            }));
        }
        {
            let replicas = replicas.clone();
            let jitter_seed = plan.r#gen();
            schedule.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(kill_at_ms)).await;
                // Mid-term: the replica leading now, if any.
                let victim = leader(&replicas).await;
                let _alone = victim.lifecycle.lock().await;
                victim.kill().await;
                tokio::time::sleep(Duration::from_millis(800)).await;
                victim.record_restart();
                victim.start(worker_config(), jitter_seed);
            }));
        }
        for i in 0..2 {
            let victim = replicas[stop_victims[i]].clone();
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
        tokio::time::sleep(Duration::from_millis(FAULTY_MS)).await;
        for task in schedule {
            task.await.expect("a fault task panicked");
        }

        // Nothing newer than the newest cutoff any delete used may be gone.
        // Freeze every replica (recorded as a pause) so no delete is in
        // flight while the table is counted.
        arrivals_done.store(true, Ordering::SeqCst);
        let arrived = inserter.await.unwrap();
        shared.faults.enabled.store(false, Ordering::SeqCst);
        let frozen: Vec<_> = replicas.iter().map(|r| r.freeze(FREEZE_MS)).collect();
        shared.in_flight.drained().await;
        let so_far = log.history(header(seed, initial_rows));
        let newest_cutoff = so_far
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
        let newer_written = boundary.chain(arrived.iter().copied()).filter(|at| *at >= newest_cutoff).count();
        let newer_kept = count(&pool, "SELECT count(*) FROM retention_records WHERE created_at_ms >= $1", &[&newest_cutoff]).await;
        assert_eq!(
            usize::try_from(newer_kept).unwrap(),
            newer_written,
            "seed {seed}: rows written at or after cutoff {newest_cutoff}, the newest any delete used, went missing"
        );
        for (replica, gate) in replicas.iter().zip(&frozen) {
            replica.thaw(gate);
        }

        // Drain without faults until a term completes with a cutoff past
        // every row written, then stop everyone.
        let last_written_ms = count(&pool, "SELECT coalesce(max(created_at_ms), 0) FROM retention_records", &[]).await;
        let drain_deadline = now_ms() + i64::try_from(DRAIN_DEADLINE_MS).unwrap();
        loop {
            let history = log.history(header(seed, initial_rows));
            if last_completed_cutoff(&history, start_ms).is_some_and(|cutoff| cutoff > last_written_ms) {
                break;
            }
            assert!(now_ms() < drain_deadline, "seed {seed}: the backlog did not drain within {DRAIN_DEADLINE_MS} ms of the faults ending");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for replica in &replicas {
            let _alone = replica.lifecycle.lock().await;
            replica.stop(1).await;
        }
        shared.in_flight.drained().await;

        let rows_left = u64::try_from(count(&pool, "SELECT count(*) FROM retention_records", &[]).await).unwrap();
        let mut history = log.history(header(seed, initial_rows));
        let final_cutoff = last_completed_cutoff(&history, start_ms).expect("a completed term");
        let stale_rows_left = u64::try_from(count(&pool, "SELECT count(*) FROM retention_records WHERE created_at_ms < $1", &[&final_cutoff]).await).unwrap();
        history.events.push(retention_sim::Event {
            at_ms: now_ms() - start_ms,
            actor: Actor::World,
            term: 0,
            kind: EventKind::Final { rows_left, rows_inserted: arrived.len() as u64, stale_rows_left },
        });

        let verdict = check(&history);
        let saved = std::env::temp_dir().join(format!("real-mode-seed-{seed}.jsonl"));
        std::fs::write(&saved, history.to_jsonl()).expect("save the history");
        let mut failure = String::new();
        for violation in &verdict.violations {
            failure.push_str(&format!("{violation}\n{}\n", excerpt(&history, &violation.events)));
        }
        assert!(verdict.passed(), "real mode, seed {seed} (rerun: REAL_MODE_SEED={seed} cargo test -p sim --test real real_mode), history in {}:\n{failure}", saved.display());

        // The database's own account of the drain.
        assert_eq!(stale_rows_left, 0, "eligible rows left after the drain");
        assert_eq!(rows_left, 0, "every row written was older than the last completed cutoff");

        let counts = summarise(&history);
        let listed: Vec<String> = counts.iter().map(|(key, n)| format!("{key} {n}")).collect();
        println!(
            "real mode, seed {seed}: {REPLICAS} replicas, {initial_rows} rows at the start + {} arrivals; {}; checker: 0 violations over {} events",
            arrived.len(),
            listed.join(", "),
            history.events.len()
        );
        // A run that dodged the faults proves little: each must have happened.
        for fault in ["crashed", "paused", "stop calls", "rejected", "ambiguous", "deletes", "grants"] {
            assert!(counts.get(fault).is_some_and(|n| *n > 0), "seed {seed}: no {fault} in the run: {listed:?}");
        }
    });
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
    }
}

/// Counts of what the run went through, so a run that dodged every fault
/// cannot pass unnoticed.
fn summarise(history: &History) -> std::collections::BTreeMap<&'static str, u64> {
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for event in &history.events {
        let key = match &event.kind {
            EventKind::Granted { .. } => "grants",
            EventKind::Deleted { rows, .. } => {
                *counts.entry("rows deleted").or_default() += rows.len() as u64;
                "deletes"
            }
            EventKind::Fenced { .. } => "fenced",
            EventKind::Revoked { .. } => "revoked",
            EventKind::Return {
                outcome: Outcome::Failed { kind, .. },
                ..
            } if kind == "rejected" => "rejected",
            EventKind::Return {
                outcome: Outcome::Failed { kind, .. },
                ..
            } if kind == "ambiguous" => "ambiguous",
            EventKind::TermEnded { end, .. } if end.starts_with("LeadershipLost") => "terms lost",
            EventKind::TermEnded { .. } => "terms",
            EventKind::StopCalled { .. } => "stop calls",
            EventKind::Paused { .. } => "paused",
            EventKind::Crashed => "crashed",
            _ => continue,
        };
        *counts.entry(key).or_default() += 1;
    }
    counts
}
