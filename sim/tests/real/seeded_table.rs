//! A table the simulator seeds (`Records::with_rows`, the backlog a run
//! starts with) against the same rows inserted into PostgreSQL: rows out of
//! age order, ties in age, ages spread over more than 2^40 ms either side
//! of zero, deleted batch by batch, must go in the same order from both,
//! oldest first and ties by id, as `ORDER BY created_at_ms, id` gives.

use retention_sim::db::{Bounds, Database, LeaseStatement, Records};
use retention_worker::pg::{PgLeaseService, PgOptions, PgRecords};

use crate::db_driver::Driver;
use crate::on_database;

const TTL_MS: u64 = 60_000;

/// Creation instants in insertion order (ids 1, 2, ...).
const CREATED_AT_MS: [i64; 14] = [
    5,
    1 << 41,
    -3,
    (1 << 40) + 7,
    5,
    0,
    -(1 << 41),
    (1 << 40) + 7,
    1,
    12_345_678_901,
    -3,
    5,
    i64::MAX - 1,
    i64::MIN + 1,
];

const BATCH: u32 = 3;

/// The model's batches: one fenced delete per transaction, as the adapter
/// runs them, until nothing is left.
fn model_batches() -> Vec<Vec<(i64, u64)>> {
    let mut driver = Driver::new(TTL_MS, &[], Bounds::default());
    driver.db = Database::new(TTL_MS, Records::with_rows(CREATED_AT_MS), Bounds::default());
    driver.advance(0);
    let owner = "a".to_owned();
    let grant = driver.lease(0, 1, LeaseStatement::Acquire { owner });
    assert!(driver.lease_answer(grant).is_some(), "granted at once");
    let mut batches = Vec::new();
    loop {
        let txn = driver.begin(0, 1);
        let fence = driver.fence(0, 1, txn, 1);
        assert!(
            matches!(driver.fence_answer(fence), Some(Ok(()))),
            "fenced in"
        );
        driver.delete(0, 1, txn, (i64::MAX, BATCH, 0));
        let commit = driver.commit(0, 1, txn);
        let rows: Vec<(i64, u64)> = (driver.rows(commit).iter())
            .map(|row| (row.created_at_ms, row.id))
            .collect();
        if rows.is_empty() {
            return batches;
        }
        batches.push(rows);
    }
}

#[test]
fn a_seeded_table_goes_oldest_first_as_postgresql_deletes_it() {
    let expected = model_batches();
    on_database("seeded", 1, async |_, pool| {
        let client = pool.get().await.expect("connect");
        for at in CREATED_AT_MS {
            client
                .execute(
                    "INSERT INTO retention_records (created_at_ms) VALUES ($1)",
                    &[&at],
                )
                .await
                .expect("insert");
        }
        drop(client);
        let options = PgOptions {
            lease_ttl_ms: TTL_MS,
            ..PgOptions::default()
        };
        let leases = PgLeaseService::new(pool.clone(), options.clone());
        let records = PgRecords::new(pool, options);
        let lease = leases.acquire_applied("a").await.expect("acquire");
        let token = lease.expect("granted").value.fencing_token;
        let mut seen = Vec::new();
        loop {
            let deleted = records
                .delete_applied(i64::MAX, BATCH, token)
                .await
                .expect("a delete under the lease");
            let rows: Vec<(i64, u64)> = (deleted.value.rows.iter())
                .map(|row| (row.created_at_ms, row.id))
                .collect();
            if rows.is_empty() {
                break;
            }
            seen.push(rows);
        }
        assert_eq!(expected, seen, "the model's batches, then PostgreSQL's");
        assert_eq!(
            seen.iter().map(Vec::len).sum::<usize>(),
            CREATED_AT_MS.len()
        );
    });
}
