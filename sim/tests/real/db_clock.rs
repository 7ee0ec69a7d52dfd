//! The steppable database clock and the deletion audit of real mode
//! (`retention_sim::real`), checked against a throwaway server.

use crate::on_database;
use retention_worker::pg::{DELETE_OLDEST, PgLeaseService, PgOptions, PgRecords};
use retention_worker::{LeaseService, RecordsRepository};

use retention_sim::real::db_clock::{audit, install, step};
use retention_sim::real::log::{RealRecorder, wall_us};
use retention_worker::pg::Pool;

/// The database's clock read between two readings of the wall clock:
/// (before, reading, after). What a loaded machine delays the query by
/// widens the bracket, not the error.
async fn bracketed_now_us(pool: &Pool) -> (i64, i64, i64) {
    let client = pool.get().await.unwrap();
    let before_us = wall_us();
    let reading_us = client
        .query_one("SELECT retention_now_us()", &[])
        .await
        .unwrap()
        .get(0);
    (before_us, reading_us, wall_us())
}

/// Whether `wall_us`, a wall-clock instant derived from a reading taken
/// within `(before_us, after_us)`, lies in that bracket to `slack_us`.
fn within(wall_us: i64, (before_us, after_us): (i64, i64), slack_us: i64) -> bool {
    (before_us - slack_us..=after_us + slack_us).contains(&wall_us)
}

/// A step moves what every statement reads, the log takes it back out,
/// and the audit tells a delete judged by the stepped clock (fine by
/// DATA-4, early by true time) from one that ignored it (early).
#[test]
fn a_stepped_database_clock_is_read_and_audited() {
    on_database("db_clock", 2, async |_, pool| {
        install(&pool).await;
        let log = RealRecorder::new();
        let options = PgOptions {
            lease_ttl_ms: 60_000,
            ..PgOptions::default()
        };
        let token = PgLeaseService::new(pool.clone(), options.clone())
            .acquire("a")
            .await
            .unwrap()
            .expect("granted")
            .fencing_token;
        let write = "INSERT INTO retention_records (created_at_ms)
                     VALUES (retention_now_us() / 1000 - $1)";
        let client = pool.get().await.unwrap();
        for age_ms in [86_400_000_i64, 86_400_000, 1_000, 1_000] {
            client.execute(write, &[&age_ms]).await.unwrap();
        }

        step(&pool, &log, 5_000).await;
        let (before_us, reading_us, after_us) = bracketed_now_us(&pool).await;
        assert!(
            within(reading_us - 5_000_000, (before_us, after_us), 10_000),
            "read {reading_us} us, 5 s ahead of neither {before_us} nor {after_us} within 10 ms"
        );
        let (before_us, reading_us, after_us) = bracketed_now_us(&pool).await;
        let back_us = log.db_to_wall_us(reading_us);
        assert!(
            within(back_us, (before_us, after_us), 100_000),
            "{back_us} vs {before_us}..{after_us}"
        );

        // Bounded by the stepped clock: all four are 3 s old by it; two
        // are younger than that by true time.
        let bounded = PgRecords::new(
            pool.clone(),
            PgOptions {
                retention_ms: 3_000,
                ..options.clone()
            },
        );
        let far_ahead_ms = wall_us() / 1_000 + 86_400_000;
        let deleted = bounded.delete_batch(far_ahead_ms, 100, token).await;
        assert_eq!(deleted.unwrap(), 4);
        let seen = audit(&pool, 3_000, |_, created_at_ms| created_at_ms).await;
        assert_eq!(
            (seen.deleted, seen.early_by_database_clock),
            (4, 0),
            "judged by the database's clock"
        );
        // Stamped by the clock before the step: only the young two.
        assert_eq!(seen.early_by_true_time, 2);

        // A delete with no bound on the database's clock takes a row
        // written just now, and the audit says so.
        client.execute(write, &[&0_i64]).await.unwrap();
        let unbounded = PgRecords::new(pool.clone(), options);
        let deleted = unbounded.delete_batch(far_ahead_ms, 100, token).await;
        assert_eq!(deleted.unwrap(), 1);
        let seen = audit(&pool, 3_000, |_, created_at_ms| created_at_ms - 5_000).await;
        assert_eq!(seen.early_by_database_clock, 1);

        // Back past where it was: the later of the two instants that
        // read the same is the one just gone.
        step(&pool, &log, -10_000).await;
        let (before_us, reading_us, after_us) = bracketed_now_us(&pool).await;
        let back_us = log.db_to_wall_us(reading_us);
        assert!(
            within(back_us, (before_us, after_us), 100_000),
            "{back_us} vs {before_us}..{after_us}"
        );
    });
}

/// Real mode's delete work (`db_clock::set_delete_work`) sleeps once the
/// statement's subquery has locked all its rows, before the first goes;
/// and its trigger counts the rows locked then. That holds only if the
/// subquery's `LockRows` runs to its end before any row is deleted: under
/// a `Hash` (built whole before the join probes it). Checked for the
/// server's custom and generic plans, with small and large tables.
#[test]
fn the_deletes_subquery_locks_all_its_rows_before_the_first_goes() {
    on_database("plans", 1, async |_, pool| {
        let client = pool.get().await.unwrap();
        client
            .batch_execute(&format!(
                "PREPARE oldest(bigint, bigint, bigint) AS {DELETE_OLDEST}"
            ))
            .await
            .unwrap();
        let mut rows = 0;
        for size in [10, 300, 5_000, 20_000] {
            client
                .execute(
                    "INSERT INTO retention_records (created_at_ms) SELECT g FROM generate_series(1, $1) g",
                    &[&(size - rows)],
                )
                .await
                .unwrap();
            rows = size;
            for mode in ["force_custom_plan", "force_generic_plan"] {
                client
                    .batch_execute(&format!("SET plan_cache_mode = {mode}"))
                    .await
                    .unwrap();
                let plan: Vec<String> = client
                    .query(
                        &format!("EXPLAIN (COSTS OFF) EXECUTE oldest({rows}, 200, 0)"),
                        &[],
                    )
                    .await
                    .unwrap()
                    .iter()
                    .map(|row| row.get::<_, String>(0))
                    .collect();
                // The LockRows node must be inside the Hash node's subtree:
                // the lines after it, indented deeper than it.
                let indent = |line: &String| line.len() - line.trim_start().len();
                let hash = plan.iter().position(|line| line.trim() == "->  Hash");
                let under_hash = hash.is_some_and(|at| {
                    plan[at + 1..]
                        .iter()
                        .take_while(|line| indent(line) > indent(&plan[at]))
                        .any(|line| line.contains("LockRows"))
                });
                assert!(
                    under_hash,
                    "{rows} rows, {mode}: the locking subquery is not under a Hash:\n{}",
                    plan.join("\n")
                );
            }
        }
    });
}
