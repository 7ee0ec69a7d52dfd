//! The adapters and the runner against a real server: migrations, the lock
//! that makes the fence atomic, error mapping, `--once` and shutdown.

use std::time::Duration;

use clap::Parser;
use retention_worker::pg::{PgLeaseService, PgOptions, PgRecords, Pool, migrate};
use retention_worker::runner::{RunnerConfig, RunnerOutcome, default_owner_id, run_runner};
use retention_worker::{CallErrorKind, LeaseService, RecordsRepository, ReleaseOutcome, TermEnd};

use crate::{on_database, runtime};
use test_support::{TempServer, rows_left};

const DAY_MS: i64 = 86_400_000;

fn options() -> PgOptions {
    PgOptions {
        lease_ttl_ms: 10_000,
        ..PgOptions::default()
    }
}

/// The lease service and the records repository over one pool, with
/// [`options`].
fn adapters(pool: &Pool) -> (PgLeaseService, PgRecords) {
    let leases = PgLeaseService::new(pool.clone(), options());
    (leases, PgRecords::new(pool.clone(), options()))
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(since.as_millis()).expect("fits")
}

#[test]
fn migrations_apply_once_even_when_replicas_start_together() {
    on_database("migrations", 4, async |_, pool| {
        // `database` migrated already: every later run, concurrent or not,
        // finds nothing to do and fails on nothing.
        let (a, b) = tokio::join!(migrate(&pool), migrate(&pool));
        assert_eq!((a.unwrap(), b.unwrap()), (vec![], vec![]));
        let client = pool.get().await.unwrap();
        let versions: Vec<i32> = client
            .query("SELECT version FROM retention_schema_migrations", &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(versions, vec![1]);
        client
            .batch_execute(
                "INSERT INTO retention_records (created_at_ms)
                     SELECT g FROM generate_series(1, 20000) g;
                 ANALYZE retention_records;",
            )
            .await
            .unwrap();
        let plan: Vec<String> = client
            .query(
                "EXPLAIN SELECT id FROM retention_records WHERE created_at_ms < 15000 \
                 ORDER BY created_at_ms, id LIMIT 200",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(plan.contains("retention_records_age"), "plan: {plan}");
    });
}

#[test]
fn a_delete_holds_the_lease_row_so_no_grant_commits_until_it_does() {
    on_database("fence_lock", 4, async |_, pool| {
        let (leases, records) = adapters(&pool);
        seed_rows(&pool, 50, 0).await;
        let lease = leases.acquire("a").await.unwrap().expect("granted");
        // Stall the adapter's delete between its fence check and its
        // DELETE: another transaction holds the records table exclusively.
        let mut blocker = pool.get().await.unwrap();
        let stall = blocker.transaction().await.unwrap();
        stall
            .batch_execute("LOCK TABLE retention_records IN EXCLUSIVE MODE")
            .await
            .unwrap();
        let deleting = tokio::spawn({
            let records = records.clone();
            async move { records.delete_applied(now_ms(), 10, 1).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!deleting.is_finished(), "the delete was not stalled");
        let renewing = tokio::spawn({
            let (leases, lease) = (leases.clone(), lease.clone());
            async move { leases.renew_applied(&lease).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !renewing.is_finished(),
            "a renewal committed while a fenced delete held the lease row"
        );
        stall.commit().await.unwrap();
        let deleted = deleting.await.unwrap().expect("the fenced delete");
        assert_eq!(deleted.value.rows.len(), 10);
        let renewed = renewing.await.unwrap().unwrap().expect("renewed");
        assert_eq!(renewed.value.fencing_token, 2);
        assert!(
            renewed.at_us > deleted.at_us,
            "the grant is ordered after the delete it waited for"
        );

        // The old token is now fenced, with the model's reason.
        let error = records
            .delete_batch(now_ms(), 10, lease.fencing_token)
            .await
            .unwrap_err();
        assert_eq!(error.kind, CallErrorKind::Fenced);
        assert_eq!(error.detail, "token 1: stale token (current is 2)");
    });
}

#[test]
fn the_worker_traits_answer_as_the_contract_says() {
    on_database("traits", 2, async |_, pool| {
        seed_rows(&pool, 5, 2).await;
        let (leases, records) = adapters(&pool);
        let first = leases.acquire("a").await.unwrap().expect("granted");
        assert_eq!((first.owner_id.as_str(), first.fencing_token), ("a", 1));
        assert_eq!(leases.acquire("b").await.unwrap(), None, "held by a");
        let renewed = leases.renew(&first).await.unwrap().expect("renewed");
        assert_eq!(renewed.fencing_token, 2);
        assert!(renewed.expires_at_ms >= first.expires_at_ms);
        assert_eq!(leases.renew(&first).await.unwrap(), None, "a stale lease");

        let cutoff = now_ms() - DAY_MS;
        assert_eq!(records.delete_batch(cutoff, 3, 2).await.unwrap(), 3);
        assert_eq!(records.delete_batch(cutoff, 3, 2).await.unwrap(), 2);
        assert_eq!(records.delete_batch(cutoff, 3, 2).await.unwrap(), 0);
        assert_eq!(rows_left(&pool).await, 2, "the fresh rows stay");

        // Release is compare-and-set: the stale lease changes nothing.
        leases.release(&first).await.unwrap();
        let (holder, _, _) = leases.inspect().await.unwrap().unwrap();
        assert_eq!(holder.as_deref(), Some("a"));
        leases.release(&renewed).await.unwrap();
        assert_eq!(
            leases.inspect().await.unwrap(),
            Some((None, 2, renewed.expires_at_ms))
        );
        let next = leases.acquire("b").await.unwrap().expect("released");
        assert_eq!(next.fencing_token, 3, "tokens continue after a release");
    });
}

/// The delete's second bound: with `retention_ms` set, a row younger than
/// the retention by the database's own clock stays whatever the cutoff
/// says (a cutoff fixed before the database's clock stepped back).
#[test]
fn a_delete_is_bounded_by_the_databases_own_clock_too() {
    on_database("bounded", 2, async |_, pool| {
        seed_rows(&pool, 5, 2).await;
        let leases = PgLeaseService::new(pool.clone(), options());
        let token = leases
            .acquire("a")
            .await
            .unwrap()
            .expect("granted")
            .fencing_token;
        let bounded = PgRecords::new(
            pool.clone(),
            PgOptions {
                retention_ms: u64::try_from(DAY_MS).unwrap(),
                ..options()
            },
        );
        let cutoff_too_late = now_ms() + DAY_MS;
        let deleted = bounded.delete_batch(cutoff_too_late, 100, token).await;
        assert_eq!(
            deleted.unwrap(),
            5,
            "only the rows a day old by the database's clock"
        );
        assert_eq!(rows_left(&pool).await, 2);
        let unbounded = PgRecords::new(pool.clone(), options());
        let deleted = unbounded.delete_batch(cutoff_too_late, 100, token).await;
        assert_eq!(
            deleted.unwrap(),
            2,
            "retention_ms 0: the cutoff alone decides"
        );
    });
}

#[test]
fn failures_map_to_the_worker_error_kinds() {
    on_database("errors", 2, async |_, pool| {
        let records = PgRecords::new(pool.clone(), options());
        // A statement the server refuses: nothing applied.
        pool.get()
            .await
            .unwrap()
            .batch_execute("DROP TABLE retention_lease")
            .await
            .unwrap();
        let error = records.delete_batch(0, 10, 1).await.unwrap_err();
        assert_eq!(error.kind, CallErrorKind::Rejected, "{error}");
        // No server at all: nothing was sent.
        let unreachable = retention_worker::pg::connect_pool(
            "postgres://postgres@127.0.0.1:1/nowhere",
            1,
            &options(),
        )
        .unwrap();
        let leases = PgLeaseService::new(unreachable, options());
        let error = leases.acquire("a").await.unwrap_err();
        assert_eq!(error.kind, CallErrorKind::Rejected, "{error}");
        assert!(error.detail.contains("no database connection"), "{error}");
        let bad =
            retention_worker::pg::connect_pool("not a url at all", 1, &options()).unwrap_err();
        assert!(bad.to_string().starts_with("DATABASE_URL"), "{bad}");
    });
}

#[test]
fn a_connection_whose_call_timed_out_is_closed_not_reused() {
    let server = TempServer::start();
    runtime().block_on(async {
        // One connection: a call handed the timed-out one would queue
        // behind the statement still waiting on it, and time out as well.
        let pool = server.database("timed_out", 1).await;
        let short = PgOptions {
            call_timeout_ms: 300,
            ..options()
        };
        let leases = PgLeaseService::new(pool.clone(), short.clone());
        let records = PgRecords::new(pool, short);
        let lease = leases.acquire("a").await.unwrap().expect("granted");
        // Another client's row lock on the lease row: the fence waits.
        let other =
            retention_worker::pg::connect_pool(&server.url("timed_out"), 1, &options()).unwrap();
        let mut blocker = other.get().await.unwrap();
        let hold = blocker.transaction().await.unwrap();
        hold.batch_execute("SELECT 1 FROM retention_lease FOR UPDATE")
            .await
            .unwrap();
        let error = records
            .delete_batch(now_ms(), 10, lease.fencing_token)
            .await
            .unwrap_err();
        assert_eq!(error.kind, CallErrorKind::Ambiguous, "{error}");
        let row = leases
            .inspect()
            .await
            .expect("answered on a new connection");
        assert_eq!(row.map(|(_, token, _)| token), Some(lease.fencing_token));
        hold.rollback().await.unwrap();
    });
}

#[test]
fn a_statement_whose_call_timed_out_is_cancelled_not_applied_later() {
    on_database("cancelled", 2, async |server, pool| {
        let leases = PgLeaseService::new(pool.clone(), options());
        let lease = leases.acquire("a").await.unwrap().expect("granted");
        // Another transaction holds the lease row FOR SHARE, as a fence
        // does: the renewal's UPDATE waits, past its 300 ms call timeout
        // but well inside its 5 s lock timeout.
        let other = retention_worker::pg::connect_pool(&server.url("cancelled"), 1, &options());
        let mut fence = other.unwrap().get().await.unwrap();
        let hold = fence.transaction().await.unwrap();
        hold.batch_execute("SELECT 1 FROM retention_lease FOR SHARE")
            .await
            .unwrap();
        let impatient = PgLeaseService::new(
            pool.clone(),
            PgOptions {
                call_timeout_ms: 300,
                ..options()
            },
        );
        let error = impatient.renew(&lease).await.unwrap_err();
        assert_eq!(error.kind, CallErrorKind::Ambiguous, "{error}");
        // Give the cancel request time to land, then free the row: a
        // renewal still queued would now apply and rotate the token.
        tokio::time::sleep(Duration::from_millis(300)).await;
        hold.rollback().await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (holder, token, _) = leases.inspect().await.unwrap().expect("a row");
        assert_eq!(
            (holder.as_deref(), token),
            (Some("a"), lease.fencing_token),
            "the abandoned renewal applied after its caller gave up"
        );
    });
}

/// A statement the server cut is reported with the server's code and words,
/// not tokio-postgres's bare "db error": an operator reading the worker's
/// log must see that `statement_timeout` fired.
#[test]
fn a_statement_the_server_cut_says_why() {
    on_database("cut", 1, async |server, admin| {
        seed_rows(&admin, 10, 0).await;
        admin
            .get()
            .await
            .unwrap()
            .batch_execute(
                "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN PERFORM pg_sleep(2); RETURN NULL; END $$;
                 CREATE TRIGGER slow BEFORE DELETE ON retention_records
                     FOR EACH STATEMENT EXECUTE FUNCTION slow();",
            )
            .await
            .unwrap();
        let bounded = PgOptions {
            statement_timeout_ms: 300,
            ..options()
        };
        let pool = server.pool("cut", 1, &bounded);
        let leases = PgLeaseService::new(pool.clone(), bounded.clone());
        let records = PgRecords::new(pool, bounded);
        let lease = leases.acquire("r1").await.unwrap().expect("a lease");
        let error = records
            .delete_batch(now_ms(), 10, lease.fencing_token)
            .await
            .unwrap_err();
        assert_eq!(error.kind, CallErrorKind::Rejected, "{error}");
        assert_eq!(
            error.detail,
            "delete: 57014 canceling statement due to statement timeout"
        );
    });
}

#[test]
fn every_pooled_connection_carries_the_server_side_bounds() {
    let server = TempServer::start();
    runtime().block_on(async {
        server.database("bounds", 1).await;
        let bounds = PgOptions {
            statement_timeout_ms: 1_234,
            lock_timeout_ms: 2_345,
            idle_in_transaction_timeout_ms: 3_456,
            keepalive_idle_ms: 4_000,
            ..options()
        };
        let pool = retention_worker::pg::connect_pool(&server.url("bounds"), 1, &bounds).unwrap();
        let client = pool.get().await.unwrap();
        let mut shown = Vec::new();
        for setting in [
            "statement_timeout",
            "lock_timeout",
            "idle_in_transaction_session_timeout",
            "tcp_keepalives_idle",
            "tcp_keepalives_interval",
            "tcp_keepalives_count",
        ] {
            let row = client
                .query_one(&format!("SHOW {setting}"), &[])
                .await
                .unwrap();
            shown.push(row.get::<_, String>(0));
        }
        // The keepalive settings are whole seconds, shown without a unit.
        assert_eq!(shown, ["1234ms", "2345ms", "3456ms", "4", "1", "3"]);
    });
}

pub(crate) fn runner_config(url: &str, extra: &[&str]) -> RunnerConfig {
    let mut args = vec![
        "retention-worker",
        "--database-url",
        url,
        "--owner-id",
        "runner-1",
        "--retention-ms",
        "86400000",
        "--lease-ttl-ms",
        "3000",
        "--renew-interval-ms",
        "500",
        "--expiry-margin-ms",
        "300",
        "--term-interval-ms",
        "50",
        "--term-jitter-ms-max",
        "10",
        // Bounds that fit the 3 s lease: 800 + 800 + 800 < 3000.
        "--call-timeout-ms",
        "800",
        "--statement-timeout-ms",
        "800",
        "--lock-timeout-ms",
        "800",
        "--idle-in-transaction-timeout-ms",
        "800",
        "--keepalive-idle-ms",
        "1000",
    ];
    args.extend_from_slice(extra);
    RunnerConfig::try_parse_from(args).expect("valid flags")
}

async fn seed_rows(pool: &retention_worker::pg::Pool, old: i64, fresh: i64) {
    let client = pool.get().await.unwrap();
    let now = now_ms();
    client
        .execute(
            "INSERT INTO retention_records (created_at_ms)
             SELECT $1 - g FROM generate_series(1, $2::bigint) g",
            &[&(now - 2 * DAY_MS), &old],
        )
        .await
        .unwrap();
    client
        .execute(
            "INSERT INTO retention_records (created_at_ms)
             SELECT $1 FROM generate_series(1, $2::bigint)",
            &[&now, &fresh],
        )
        .await
        .unwrap();
}

#[test]
fn the_runner_once_runs_one_capped_term_and_releases() {
    on_database("runner_once", 2, async |server, pool| {
        seed_rows(&pool, 1_500, 7).await;
        let config = runner_config(&server.url("runner_once"), &["--once"]);
        let outcome = run_runner(config, std::future::pending()).await.unwrap();
        let RunnerOutcome::Once(report) = &outcome else {
            panic!("not a --once outcome: {outcome:?}");
        };
        assert_eq!(
            (&report.end, report.rows_deleted, &report.release),
            (&TermEnd::Capped, 1_000, &ReleaseOutcome::Released)
        );
        assert!(!outcome.failed());
        assert_eq!(rows_left(&pool).await, 507);
        let leases = PgLeaseService::new(pool.clone(), options());
        let (holder, token, _) = leases.inspect().await.unwrap().expect("the row exists");
        assert_eq!((holder, token), (None, report.last_fencing_token.unwrap()));
    });
}

#[test]
fn a_shutdown_mid_service_returns_only_after_the_release() {
    on_database("runner_stop", 2, async |server, pool| {
        seed_rows(&pool, 20_000, 3).await;
        let config = runner_config(&server.url("runner_stop"), &[]);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let runner = tokio::spawn(run_runner(config, async {
            let _ = rx.await;
        }));
        // Let it delete for a while, then ask it to stop mid-backlog.
        tokio::time::sleep(Duration::from_millis(400)).await;
        tx.send(()).unwrap();
        let outcome = runner.await.unwrap().unwrap();
        let RunnerOutcome::Served(summary) = outcome else {
            panic!("not a service outcome: {outcome:?}");
        };
        assert!(summary.rows_deleted > 0, "{summary:?}");
        assert!(
            rows_left(&pool).await > 3,
            "shut down before the backlog drained"
        );
        let leases = PgLeaseService::new(pool.clone(), options());
        let (holder, _, _) = leases.inspect().await.unwrap().expect("the row exists");
        assert_eq!(
            holder, None,
            "the runner returned while still holding the lease"
        );
    });
}

#[test]
fn the_runner_names_the_flag_that_breaks_a_rule() {
    // Checked before any connection is tried.
    let url = "postgres://postgres@127.0.0.1:1/never-contacted";
    let refused = |flags: &[&str]| {
        let config = runner_config(url, flags);
        runtime()
            .block_on(run_runner(config, std::future::pending()))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused(&["--renew-interval-ms", "5000"]),
        "--renew-interval-ms = 5000: must be shorter than lease_ttl_ms"
    );
    assert_eq!(
        refused(&["--statement-timeout-ms", "3000"]),
        "--statement-timeout-ms = 3000: must be shorter than lease_ttl_ms"
    );
    assert_eq!(
        refused(&["--lock-timeout-ms", "0"]),
        "--lock-timeout-ms = 0: must be > 0 (0 means no bound)"
    );
    assert_eq!(
        refused(&["--idle-in-transaction-timeout-ms", "1400"]),
        "--idle-in-transaction-timeout-ms = 1400 (call 800 + statement 800 + idle 1400 \
         + commit wait 0 = 3000 ms, TTL 3000 ms): makes call_timeout_ms + \
         statement_timeout_ms + idle_in_transaction_timeout_ms + commit_wait_ms_max reach \
         lease_ttl_ms: a stalled holder's lock would outlast its lease"
    );
    assert_eq!(
        refused(&["--keepalive-idle-ms", "500"]),
        "--keepalive-idle-ms = 500: must be at least 1000 (the server counts whole seconds), \
         at most 32767000 (Linux's limit) and shorter than lease_ttl_ms"
    );
}

#[test]
fn a_once_term_whose_acquire_fails_exits_as_a_failure() {
    let server = TempServer::start();
    // No migrations: the lease table does not exist, the server refuses.
    let config = runner_config(&server.url("postgres"), &["--once", "--skip-migrations"]);
    let outcome = runtime()
        .block_on(run_runner(config, std::future::pending()))
        .unwrap();
    let RunnerOutcome::Once(report) = &outcome else {
        panic!("not a --once outcome: {outcome:?}");
    };
    match &report.end {
        TermEnd::AcquireFailed(error) => assert_eq!(error.kind, CallErrorKind::Rejected),
        other => panic!("expected a failed acquire, got {other:?}"),
    }
    assert!(outcome.failed());
}

#[test]
fn flags_reach_the_worker_and_the_adapters() {
    let config = runner_config(
        "postgres://postgres@127.0.0.1:1/unused",
        &[
            "--lease-name",
            "nightly",
            "--call-timeout-ms",
            "700",
            "--batch-size",
            "50",
        ],
    );
    let worker = config.worker_config();
    assert_eq!(
        (
            worker.batch_size,
            worker.retention_ms,
            worker.lease_ttl_ms,
            worker.renew_interval_ms
        ),
        (50, 86_400_000, 3_000, 500)
    );
    assert_eq!(
        (
            worker.expiry_margin_ms,
            worker.term_interval_ms,
            worker.term_jitter_ms_max
        ),
        (300, 50, 10)
    );
    let pg = config.pg_options();
    assert_eq!(
        (pg.lease_name.as_str(), pg.lease_ttl_ms, pg.call_timeout_ms),
        ("nightly", 3_000, 700)
    );
    assert_eq!(
        (
            pg.statement_timeout_ms,
            pg.lock_timeout_ms,
            pg.idle_in_transaction_timeout_ms,
            pg.keepalive_idle_ms
        ),
        (800, 800, 800, 1_000)
    );
    assert_eq!(config.owner(), "runner-1");
    assert_eq!(default_owner_id(Some("web-1\n"), 42), "web-1-42");
    assert_eq!(default_owner_id(Some("  "), 42), "replica-42");
    assert_eq!(default_owner_id(None, 7), "replica-7");
}
