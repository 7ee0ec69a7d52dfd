//! Rows per second of the fenced delete (the PostgreSQL adapter: a
//! transaction that share-locks the lease row under the caller's token, then
//! deletes a batch) against an unfenced batched delete (the adapter's own
//! DELETE statement, `DELETE_OLDEST`, alone) on the same table, on a
//! throwaway local server.
//!
//! `cargo bench -p sim --bench fenced_delete`. Rounds alternate between the
//! two so drift on a shared machine hits both; each round starts from a
//! freshly filled and vacuumed table. Figures are medians over rounds.

use std::time::Instant;

use retention_worker::pg::{DELETE_OLDEST, PgLeaseService, PgOptions, PgRecords, Pool};
use retention_worker::{LeaseService, RecordsRepository};
use test_support::TempServer;

const ROWS_PER_ROUND: i64 = 40_000;
const ROUNDS: usize = 5;

async fn refill(pool: &Pool) {
    let client = pool.get().await.unwrap();
    client
        .batch_execute(&format!(
            "TRUNCATE retention_records;
             INSERT INTO retention_records (created_at_ms)
                 SELECT g FROM generate_series(1, {ROWS_PER_ROUND}) g;"
        ))
        .await
        .unwrap();
    // Its own statement: VACUUM refuses to run inside a multi-statement batch.
    client
        .batch_execute("VACUUM ANALYZE retention_records")
        .await
        .unwrap();
}

/// Deletes every row in batches of `batch` with `delete` (which returns
/// the rows one batch removed); returns rows per second.
async fn rows_per_sec<F, Fut>(batch: u32, mut delete: F) -> f64
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = u64>,
{
    let started = Instant::now();
    let mut total = 0;
    loop {
        let rows = delete().await;
        total += rows;
        if rows < u64::from(batch) {
            break;
        }
    }
    assert_eq!(total, ROWS_PER_ROUND as u64);
    total as f64 / started.elapsed().as_secs_f64()
}

/// Through the adapter: the share lock under the token, then the delete.
async fn fenced(records: &PgRecords, token: u64, batch: u32) -> f64 {
    rows_per_sec(batch, || async {
        let deleted = records.delete_batch(ROWS_PER_ROUND + 1, batch, token);
        deleted.await.unwrap()
    })
    .await
}

/// The adapter's own DELETE statement, prepared, with no fence around it.
async fn unfenced(pool: &Pool, batch: u32) -> f64 {
    let client = pool.get().await.unwrap();
    let statement = client.prepare(DELETE_OLDEST).await.unwrap();
    let params = (ROWS_PER_ROUND + 1, i64::from(batch), 0i64);
    rows_per_sec(batch, || async {
        let rows = client
            .query(&statement, &[&params.0, &params.1, &params.2])
            .await;
        rows.unwrap().len() as u64
    })
    .await
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let server = TempServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let pool = server.database("bench", 2).await;
        let options = PgOptions {
            // Long enough that the lease outlives the benchmark.
            lease_ttl_ms: 3_600_000,
            ..PgOptions::default()
        };
        let leases = PgLeaseService::new(pool.clone(), options.clone());
        let records = PgRecords::new(pool.clone(), options);
        let lease = leases.acquire("bench").await.unwrap().expect("granted");
        println!(
            "fenced vs unfenced batched delete, {ROWS_PER_ROUND} rows per round, median of {ROUNDS} rounds"
        );
        println!("{:>6} {:>14} {:>14} {:>7}", "batch", "fenced rows/s", "unfenced rows/s", "ratio");
        for batch in [200u32, 50] {
            let (mut with, mut without) = (Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                refill(&pool).await;
                with.push(fenced(&records, lease.fencing_token, batch).await);
                refill(&pool).await;
                without.push(unfenced(&pool, batch).await);
            }
            let (with, without) = (median(with), median(without));
            println!(
                "{batch:>6} {with:>14.0} {without:>14.0} {:>7.2}",
                with / without
            );
        }
    });
}
