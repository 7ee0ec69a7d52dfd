//! The `retention-worker` binary as deployed: SIGTERM mid-backlog stops the
//! worker, and the process exits only after the term settled and the lease
//! was released. Needs PostgreSQL's server binaries (see the README).

#![cfg(feature = "runner")]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use retention_worker::pg::{PgLeaseService, PgOptions};
use test_support::{TempServer, insert_old_rows, rows_left};

#[test]
fn sigterm_stops_after_the_term_settles_and_the_lease_is_released() {
    let server = TempServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pool = runtime.block_on(server.database("runner_signal", 1));
    runtime.block_on(insert_old_rows(&pool, 200_000));
    let child = Command::new(env!("CARGO_BIN_EXE_retention-worker"))
        .env("DATABASE_URL", server.url("runner_signal"))
        .env("RUST_LOG", "info")
        .args(["--owner-id", "signal-test", "--retention-ms", "1000"])
        .args(["--lease-ttl-ms", "3000", "--renew-interval-ms", "500"])
        .args(["--expiry-margin-ms", "300", "--term-interval-ms", "20"])
        .args(["--term-jitter-ms-max", "5"])
        .args(["--call-timeout-ms", "800", "--statement-timeout-ms", "800"])
        .args([
            "--lock-timeout-ms",
            "800",
            "--idle-in-transaction-timeout-ms",
            "800",
        ])
        .args(["--keepalive-idle-ms", "1000"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start retention-worker");
    // Wait until it holds the lease: the signal then lands mid-term or
    // between terms of a backlog far from drained.
    let leases = PgLeaseService::new(pool.clone(), PgOptions::default());
    let deadline = Instant::now() + Duration::from_secs(30);
    while runtime
        .block_on(leases.inspect())
        .unwrap()
        .is_none_or(|(holder, _, _)| holder.is_none())
    {
        assert!(Instant::now() < deadline, "the runner never took the lease");
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {}: {log}", output.status);
    // A log file (stderr not a terminal) holds no terminal colour codes.
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file:\n{log:?}"
    );
    let shutdown = log.find("shutdown requested").expect(&log);
    let exiting = log.find("retention worker exiting").expect(&log);
    assert!(shutdown < exiting, "{log}");
    let (holder, _, _) = runtime.block_on(leases.inspect()).unwrap().unwrap();
    assert_eq!(holder, None, "exited still holding the lease:\n{log}");
    let left = runtime.block_on(rows_left(&pool));
    assert!(
        left > 0,
        "the backlog drained before the signal: nothing tested"
    );
}

/// A production box's environment holds the real URL: neither `--help` nor
/// a failed start may print any part of its password.
#[test]
fn the_database_password_is_never_printed() {
    let password = "s3cr3t-Pa55";
    let run = |url: &str, args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_retention-worker"))
            .env("DATABASE_URL", url)
            .env("RUST_LOG", "debug")
            .args(args)
            .output()
            .expect("start retention-worker");
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            !shown.contains(password),
            "{args:?} printed the password:\n{shown}"
        );
        assert!(
            !shown.contains("Pa55"),
            "{args:?} printed part of it:\n{shown}"
        );
        (output.status.code(), shown)
    };
    let url = format!("postgres://app:{password}@db.invalid:5432/prod");
    let (status, help) = run(&url, &["--help"]);
    assert_eq!(status, Some(0));
    assert!(help.contains("[env: DATABASE_URL]"), "{help}");
    // Nothing listens on port 1: the start fails, naming no password.
    let url = format!("postgres://app:{password}@127.0.0.1:1/prod?connect_timeout=2");
    let (status, error) = run(&url, &["--once", "--owner-id", "r1"]);
    assert_eq!(status, Some(2), "{error}");
    assert!(error.contains("no database connection"), "{error}");
    // A URL the driver refuses, password and all.
    let url = format!("postgres://app:{password}@127.0.0.1:notaport/prod");
    let (status, error) = run(&url, &["--once"]);
    assert_eq!(status, Some(2), "{error}");
    assert!(error.contains("not a PostgreSQL URL"), "{error}");
}

/// A failed start whose error cannot be written (stderr on a full disk)
/// still exits with its status, not a panic's 101.
#[test]
fn an_error_that_cannot_be_written_still_exits_with_its_status() {
    let full = || {
        Stdio::from(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full"),
        )
    };
    for args in [
        &["--batch-size", "x"][..],
        &["--once", "--owner-id", "r1"][..],
    ] {
        let status = Command::new(env!("CARGO_BIN_EXE_retention-worker"))
            .env(
                "DATABASE_URL",
                "postgres://app@127.0.0.1:1/prod?connect_timeout=2",
            )
            .args(args)
            .stdout(full())
            .stderr(full())
            .status()
            .expect("start retention-worker");
        assert_eq!(status.code(), Some(2), "{args:?}");
    }
}
