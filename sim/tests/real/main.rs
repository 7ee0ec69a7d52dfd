//! Real-mode tests: the worker's PostgreSQL adapters and runner against a
//! throwaway PostgreSQL server, the simulator's models checked against the
//! database (differential), and three replicas on tokio whose history the
//! simulator's checker judges.
//!
//! Each test starts its own server (`server.rs`); a machine without the
//! PostgreSQL binaries fails these tests with the command that installs them.

mod adapters;
mod differential;
mod faults;
mod log;
mod port;
mod real_mode;
mod replica;
mod server;

/// A multi-threaded tokio runtime for one test.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
