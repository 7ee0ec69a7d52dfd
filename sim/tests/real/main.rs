//! Real-mode tests: the worker's PostgreSQL adapters and runner against a
//! throwaway PostgreSQL server, the simulator's database model checked
//! against the real one (one statement at a time, and in concurrent
//! interleavings), and three replicas on tokio whose history the
//! simulator's checker judges.
//!
//! Map: `test_support::TempServer` (`worker/test-support`) starts a
//! throwaway server per test (installing Debian's package if the binaries
//! are missing, failing with the command otherwise); `adapters.rs` tests
//! the adapters and runner; `differential.rs` and `concurrent.rs` compare
//! the model with the server; `real_mode.rs` runs three replicas under a
//! seeded plan through `retention_sim::real::run_plan` (a replica's
//! lifecycle, the recording, faulty view of the adapters, the freeze, the
//! history log, the steppable database clock and deletion audit, the
//! server's own events from its log), as `sim replay --real` does;
//! `replay.rs` drives that command; `db_clock.rs` checks that clock and
//! audit against the server; `unheard.rs` makes a commit outlast its
//! adapter's timer and checks the history still holds the effect;
//! `interrupts.rs` signals every real-mode command and looks for a server,
//! a folder or a temporary file left behind; `outputs.rs` holds real
//! mode's files to the safe writer's rules.

mod adapters;
mod commit_wait;
mod concurrent;
mod db_clock;
#[path = "../common/db_driver.rs"]
mod db_driver;
mod differential;
mod interrupts;
mod outputs;
mod real_mode;
mod replay;
mod round_trips;
mod seeded_table;
mod timed;
mod unheard;

/// Held by the tests that measure time (round trips, statements' ends
/// within a tolerance), by those whose real runs must fall one way, and
/// by those that load both cores for tens of seconds, so that none of
/// them overlaps another: a 100 ms round trip must not be read as two
/// because another test's three replicas had the cores.
pub(crate) fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ALONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `test` on a fresh runtime against a fresh server, given the server
/// and a pool of `connections` to its new database `name`; the server stops
/// when the test returns.
fn on_database(
    name: &str,
    connections: usize,
    test: impl AsyncFnOnce(&test_support::TempServer, retention_worker::pg::Pool),
) {
    let server = test_support::TempServer::start();
    runtime().block_on(async {
        let pool = server.database(name, connections).await;
        test(&server, pool).await;
    });
}

/// A command line's words, as a shell splits one without quotes.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// A multi-threaded tokio runtime for one test.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
