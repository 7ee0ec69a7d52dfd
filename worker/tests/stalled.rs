//! A holder that stops taking part between its fence and its `COMMIT`
//! cannot keep the cluster from failing over: the `retention-worker` binary
//! frozen with SIGSTOP, and cut off by a partition that closes nothing, each
//! with its fence's share lock on the lease row, and a successor granted
//! within the bound `worker/README.md` states ("A stalled client cannot
//! hold the cluster"). Needs PostgreSQL's server binaries.

#![cfg(feature = "runner")]

use std::cell::OnceCell;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use retention_worker::LeaseService;
use retention_worker::pg::{PgLeaseService, PgOptions, Pool, connect_pool};
use test_support::{Proxy, TempServer, insert_old_rows};

/// The bounds both tests run with: 800 + 800 + 800 = 2,400 ms of lock hold
/// at most, under a 3 s lease.
const TTL_MS: u64 = 3_000;
const BOUND_MS: u64 = 800;

fn options() -> PgOptions {
    PgOptions {
        lease_ttl_ms: TTL_MS,
        call_timeout_ms: BOUND_MS,
        statement_timeout_ms: BOUND_MS,
        lock_timeout_ms: BOUND_MS,
        idle_in_transaction_timeout_ms: BOUND_MS,
        keepalive_idle_ms: 1_000,
        ..PgOptions::default()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The runner as deployed, with [`options`], deleting old rows from the
/// database at `url`.
fn start_runner(url: &str) -> Child {
    let bound = BOUND_MS.to_string();
    Command::new(env!("CARGO_BIN_EXE_retention-worker"))
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .args(["--owner-id", "stalled", "--retention-ms", "1000"])
        .args([
            "--lease-ttl-ms",
            &TTL_MS.to_string(),
            "--renew-interval-ms",
            "500",
        ])
        .args(["--expiry-margin-ms", "300", "--term-interval-ms", "20"])
        .args([
            "--call-timeout-ms",
            &bound,
            "--statement-timeout-ms",
            &bound,
        ])
        .args([
            "--lock-timeout-ms",
            &bound,
            "--idle-in-transaction-timeout-ms",
            &bound,
        ])
        .args(["--keepalive-idle-ms", "1000"])
        .stderr(Stdio::null())
        .spawn()
        .expect("start retention-worker")
}

/// The runner's backend while its delete is stalled, with the fence's lock
/// taken: `(pid, state)` of a session whose last statement is the delete.
async fn delete_backend(monitor: &Pool) -> Option<(i32, String)> {
    let client = monitor.get().await.unwrap();
    let row = client
        .query_opt(
            "SELECT pid, state FROM pg_stat_activity
             WHERE query LIKE '%DELETE FROM retention_records%'
               AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    row.map(|row| (row.get(0), row.get(1)))
}

/// What a test saw after the holder stopped taking part at `stalled_at`.
struct Failover {
    lock_gone_ms: u128,
    granted_ms: u128,
}

/// Holds the records table so the runner's delete stalls after its fence,
/// waits for that, lets `stall` stop the runner (freeze or partition), then
/// frees the table, so the runner's transaction sits open holding the
/// lease row, and measures until the server ends it and a successor
/// holds the lease.
fn fail_over(
    name: &str,
    runner_url: impl FnOnce(&TempServer) -> String,
    stall: impl FnOnce(&Child),
) -> Failover {
    let server = TempServer::start();
    let rt = runtime();
    let pool = rt.block_on(server.database(name, 4));
    let direct = connect_pool(&server.url(name), 4, &options()).unwrap();
    rt.block_on(insert_old_rows(&pool, 5_000));
    let mut blocker = rt.block_on(pool.get()).unwrap();
    let hold = rt.block_on(blocker.transaction()).unwrap();
    rt.block_on(hold.batch_execute("LOCK TABLE retention_records IN EXCLUSIVE MODE"))
        .unwrap();
    let mut child = start_runner(&runner_url(&server));
    let deadline = Instant::now() + Duration::from_secs(30);
    let pid = loop {
        if let Some((pid, state)) = rt.block_on(delete_backend(&pool)) {
            if state == "active" {
                break pid;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the runner's delete never stalled"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    stall(&child);
    let stalled_at = Instant::now();
    rt.block_on(hold.rollback()).unwrap();
    let successor = PgLeaseService::new(direct, options());
    let mut lock_gone_ms = None;
    let granted_ms = loop {
        let elapsed = stalled_at.elapsed();
        assert!(
            elapsed < Duration::from_secs(20),
            "no successor after {elapsed:?}: the stalled holder kept the lease row"
        );
        if lock_gone_ms.is_none()
            && rt
                .block_on(delete_backend(&pool))
                .is_none_or(|(other, _)| other != pid)
        {
            lock_gone_ms = Some(elapsed.as_millis());
        }
        if let Ok(Some(lease)) = rt.block_on(successor.acquire("successor")) {
            assert_eq!(lease.owner_id, "successor");
            break stalled_at.elapsed().as_millis();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.kill();
    let _ = child.wait();
    Failover {
        lock_gone_ms: lock_gone_ms.unwrap_or(granted_ms),
        granted_ms,
    }
}

/// The bound from `worker/README.md`: the lock goes within call + statement + idle
/// bounds of the stall, and the successor is granted once the holder's
/// lease (renewed before the stall) has expired, plus its own retries.
fn assert_within_the_formula(seen: &Failover, what: &str) {
    let hold_ms = u128::from(options().longest_lock_hold_ms());
    let slack_ms = 500;
    eprintln!(
        "{what}: lock released {} ms after the stall (bound {hold_ms} ms), successor granted \
         after {} ms (bound {} ms)",
        seen.lock_gone_ms,
        seen.granted_ms,
        u128::from(TTL_MS).max(hold_ms)
    );
    assert!(
        seen.lock_gone_ms <= hold_ms + slack_ms,
        "{what}: lock held {} ms",
        seen.lock_gone_ms
    );
    assert!(
        seen.granted_ms <= u128::from(TTL_MS).max(hold_ms) + slack_ms,
        "{what}: successor waited {} ms",
        seen.granted_ms
    );
}

#[test]
fn a_holder_frozen_between_fence_and_commit_loses_the_row_to_the_server() {
    let seen = fail_over(
        "frozen",
        |server| server.url("frozen"),
        |child| {
            let status = Command::new("kill")
                .args(["-STOP", &child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        },
    );
    assert_within_the_formula(&seen, "SIGSTOP");
}

#[test]
fn a_holder_cut_off_between_fence_and_commit_loses_the_row_to_the_server() {
    let proxy = OnceCell::new();
    let seen = fail_over(
        "partitioned",
        |server| {
            let through = Proxy::start(server.port());
            let url = format!(
                "postgres://postgres@127.0.0.1:{}/partitioned",
                through.port()
            );
            assert!(proxy.set(through).is_ok(), "one proxy");
            url
        },
        |_| proxy.get().expect("started").partition(),
    );
    assert_within_the_formula(&seen, "partition");
}
