//! Commits that wait for a synchronous standby, against PostgreSQL: the
//! runner refuses a server whose commits wait unless told how long it may
//! wait, and the lock-hold rule holds only with that wait counted. The
//! test's server names a standby that does not exist, so every commit that
//! wrote something waits until it is cancelled.

use std::time::{Duration, Instant};

use retention_worker::pg::{PgLeaseService, PgOptions, connect_pool};
use retention_worker::runner::run_runner;
use retention_worker::{CallErrorKind, LeaseService};

use crate::adapters::runner_config;
use crate::runtime;
use test_support::TempServer;

const CALL_TIMEOUT_MS: u64 = 800;

/// Names a standby nobody runs and, for database `name` (the test server
/// runs with `synchronous_commit = off` for speed), turns synchronous
/// commit back on, as a worker session there then sees it.
async fn standby_nobody_answers(server: &TempServer, name: &str) {
    let admin = connect_pool(&server.url("postgres"), 1, &PgOptions::default()).expect("pool");
    let client = admin.get().await.expect("connect");
    client
        .batch_execute(&format!(
            "ALTER DATABASE {name} SET synchronous_commit = on"
        ))
        .await
        .expect("synchronous commit for the test database");
    name_the_standby(&client, "nobody").await;
}

/// Sets `synchronous_standby_names` to `names` ('' for none) and reloads
/// the configuration.
pub(crate) async fn name_the_standby(client: &tokio_postgres::Client, names: &str) {
    client
        .batch_execute(&format!(
            "ALTER SYSTEM SET synchronous_standby_names = '{names}'"
        ))
        .await
        .expect("name the standby");
    client
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .expect("reload");
    // The reload reaches new backends at once; give the postmaster a beat.
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Runs `test` on a fresh runtime against database `name` on a fresh
/// server whose commits there wait for a standby nobody runs, given the
/// database's URL.
fn with_commits_waiting(name: &str, test: impl AsyncFnOnce(String)) {
    let server = TempServer::start();
    runtime().block_on(async {
        drop(server.database(name, 1).await);
        standby_nobody_answers(&server, name).await;
        test(server.url(name)).await;
    });
}

#[test]
fn the_runner_refuses_commits_that_wait_for_a_standby_unless_told_how_long() {
    with_commits_waiting("waits", async |url| {
        let refused = run_runner(runner_config(&url, &["--once"]), std::future::pending())
            .await
            .expect_err("commits wait for a standby")
            .to_string();
        assert!(
            refused.contains("synchronous_standby_names = 'nobody'")
                && refused.contains("--commit-wait-ms-max"),
            "{refused}"
        );
        // Vouched for, but 800 + 800 + 800 + 700 reaches the 3 s lease.
        let too_long = ["--once", "--commit-wait-ms-max", "700"];
        let refused = run_runner(runner_config(&url, &too_long), std::future::pending())
            .await
            .expect_err("the rule counts the commit wait")
            .to_string();
        assert!(refused.contains("commit wait 700 = 3100 ms"), "{refused}");
    });
}

#[test]
fn a_grant_waiting_for_the_standby_holds_the_row_until_the_adapter_cancels_it() {
    with_commits_waiting("held", async |url| {
        let options = PgOptions {
            call_timeout_ms: CALL_TIMEOUT_MS,
            statement_timeout_ms: 800,
            lock_timeout_ms: 800,
            idle_in_transaction_timeout_ms: 800,
            keepalive_idle_ms: 1_000,
            ..PgOptions::for_lease_ttl(3_000)
        };
        let pool = |size| connect_pool(&url, size, &options).expect("pool");
        let leases = PgLeaseService::new(pool(2), options.clone());
        let started = Instant::now();
        let first = leases.acquire("a").await;
        let answered_ms = started.elapsed().as_millis();
        let error = first.expect_err("the commit never becomes durable");
        assert_eq!(error.kind, CallErrorKind::Ambiguous, "{error}");
        // The adapter's cancel ended the wait: committed locally, visible.
        let mut seen_ms = None;
        for _ in 0..100 {
            if let Ok(Some((Some(owner), _, _))) = leases.inspect().await {
                assert_eq!(owner, "a");
                seen_ms = Some(started.elapsed().as_millis());
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let seen_ms = seen_ms.expect("the cancelled commit completed locally");
        eprintln!(
            "commit waiting for an absent standby: call answered after {answered_ms} ms \
             (call timeout {CALL_TIMEOUT_MS}), grant visible after {seen_ms} ms"
        );
        assert!(answered_ms >= u128::from(CALL_TIMEOUT_MS));
        // Bound: the call timeout, then the cancel's own round trips.
        assert!(
            seen_ms < u128::from(CALL_TIMEOUT_MS) + 2_000,
            "{seen_ms} ms"
        );
    });
}

#[test]
fn a_client_gone_during_its_commit_wait_leaves_the_row_locked_past_every_bound() {
    // Why W is in the rule: with no cancel from its client, nothing the
    // adapters set ends a commit's wait for the standby.
    with_commits_waiting("gone", async |url| {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        let connection = tokio::spawn(connection);
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .expect("pid")
            .get(0);
        let acquire = tokio::spawn(async move {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
                [&"retention", &"a", &3_000i64];
            let _ = client.query(retention_worker::pg::ACQUIRE, &params).await;
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        // The client vanishes: its socket closes, no cancel is sent.
        acquire.abort();
        connection.abort();
        let gone = Instant::now();
        let observer = connect_pool(&url, 1, &PgOptions::default()).expect("pool");
        let observer = observer.get().await.expect("connect");
        // Past C + S + I of the adapters' bounds (2.4 s here).
        tokio::time::sleep(Duration::from_millis(3_000)).await;
        let waiting: Option<String> = observer
            .query_opt(
                "SELECT wait_event FROM pg_stat_activity WHERE pid = $1",
                &[&pid],
            )
            .await
            .expect("pg_stat_activity")
            .and_then(|row| row.get(0));
        let held_ms = gone.elapsed().as_millis();
        eprintln!(
            "client gone during its commit wait: backend still waiting on {waiting:?} \
             {held_ms} ms later"
        );
        assert_eq!(
            waiting.as_deref(),
            Some("SyncRep"),
            "the backend still waits"
        );
        // A cancel (pg_cancel_backend, as the adapter's would be) ends it.
        observer
            .execute("SELECT pg_cancel_backend($1)", &[&pid])
            .await
            .expect("cancel");
        let mut committed = false;
        for _ in 0..100 {
            let row = observer
                .query_opt("SELECT owner FROM retention_lease", &[])
                .await
                .expect("read the row");
            if row.is_some() {
                committed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(committed, "the cancelled commit completed locally");
    });
}
