//! A retention worker that deletes old rows only while it holds a leader
//! lease, and carries the lease's fencing token on every delete.
//!
//! Several replicas run this worker against one lease service and one records
//! repository. One call of [`Worker::run`] is one leadership term; the
//! [`Worker::serve`] loop runs terms on a schedule until [`Worker::stop`].
//!
//! # The contract, clause by clause
//! Each clause ID names a rule of the project's contract; the code that keeps
//! it says so next to it.
//!
//! | id | what the worker guarantees | where |
//! |---|---|---|
//! | ACQ-1 | nothing is renewed, deleted or released unless acquire granted a lease; a failed acquire is reported | `term.rs` |
//! | REN-1 | one renewal loop, each call awaited before the next is scheduled | `term.rs` |
//! | REN-2 | every renewal sends the latest lease; only a newer token replaces it | `term.rs`, `state.rs` |
//! | REN-3 | null, failure, or no answer by expiry all take the one loss path; no delete or renewal after it | `state.rs` |
//! | FEN-1 | every delete reads the latest stored token just before it is issued | `term.rs` |
//! | FEN-2 | the repository checks the token atomically with the delete (system level) | `memory`, `pg` (`records.rs`) |
//! | CUT-1 | one cutoff per term, computed once after acquire | `term.rs` |
//! | CAP-1 | batches of at most `batch_size` and the remaining allowance; the term ends at the cap or a short batch | `term.rs`, `config.rs` |
//! | REL-1 | release reads the latest stored lease, and only after acquire | `term.rs` |
//! | REL-2 | release is compare-and-set in the lease service | [`LeaseService::release`], `memory`, `pg` (`lease.rs`) |
//! | REL-3 | one exit path releases after normal end, delete failure and stop; not after a null renewal | `term.rs` |
//! | STP-1 | after `stop()` no acquire, renew or delete begins | `term.rs`, `state.rs` |
//! | STP-2 | `stop()` ends renewal scheduling | `term.rs` |
//! | STP-3 | calls in flight are awaited, never dropped | `term.rs` |
//! | STP-4 | a lease granted to an acquire that raced `stop()` is released | `term.rs` |
//! | STP-5 | `stop()` resolves after `run()` settles, for every caller, at any time | `worker.rs` |
//! | STP-6 | `run()` after `stop()` returns at once, calling nothing | `state.rs` |
//!
//! Beyond the contract, the worker never starts a delete when its lease is
//! within [`WorkerConfig::expiry_margin_ms`] of expiring on its own clock, and
//! treats a renewal still unanswered at expiry as a loss.
//!
//! # Using it in a service
//! Implement [`Clock`], [`LeaseService`] and [`RecordsRepository`] for your
//! runtime and storage (every method returns a `Send` future; map failures to
//! [`CallError`]), then share one [`Worker`] between the task that serves and
//! the shutdown path that stops it. Here the in-memory reference models stand
//! in for a real lease table and database:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::{Duration, Instant};
//!
//! use retention_worker::memory::{InMemoryBackend, RecordTable};
//! use retention_worker::{Clock, Dependencies, SeededJitter, TermEnd, Worker, WorkerConfig};
//!
//! #[derive(Clone)]
//! struct TokioClock(Instant);
//!
//! impl Clock for TokioClock {
//!     fn now_ms(&self) -> i64 {
//!         self.0.elapsed().as_millis() as i64
//!     }
//!     async fn sleep_ms(&self, duration_ms: u64) {
//!         tokio::time::sleep(Duration::from_millis(duration_ms)).await;
//!     }
//! }
//!
//! # let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! # runtime.block_on(async {
//! let clock = TokioClock(Instant::now());
//! let mut rows = RecordTable::new();
//! for age_days in 31..2_000 {
//!     rows.insert(-age_days * 24 * 3_600_000);
//! }
//! let backend = Arc::new(InMemoryBackend::new(clock.clone(), 30_000, rows));
//! let deps = Dependencies { clock, leases: backend.clone(), records: backend };
//! let worker = Arc::new(Worker::new("replica-1", WorkerConfig::default(), deps)?);
//!
//! // One term by hand...
//! let report = worker.run().await?;
//! assert_eq!((report.end, report.rows_deleted), (TermEnd::Capped, 1_000));
//!
//! // ...or the service loop, until shutdown calls stop().
//! let serving = worker.clone();
//! let service = tokio::spawn(async move {
//!     serving.serve(&mut SeededJitter::new(7), |report| println!("{report:?}")).await
//! });
//! tokio::time::sleep(Duration::from_millis(50)).await; // ...some time later:
//! worker.stop().await; // resolves once the loop has settled and released
//! let summary = service.await??;
//! assert_eq!(summary.rows_deleted, 969); // the rest of the backlog, in one term
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Map of the code
//! - `config.rs`: [`WorkerConfig`], its defaults and validation.
//! - `lease.rs`: [`Lease`] and [`CallError`], the error of every dependency call.
//! - `ports.rs`: the injected traits [`Clock`], [`LeaseService`],
//!   [`RecordsRepository`], [`Jitter`], and [`SeededJitter`].
//! - `report.rs`: [`TermReport`], [`TermEnd`], [`LossCause`], [`RunError`].
//! - `state.rs`: the one place the stop flag, the running term and its latest
//!   lease live.
//! - `watched.rs`: a value tasks wait on, woken in a fixed order.
//! - `term.rs`: one term: acquire, the delete loop, the renewal loop, release.
//! - `worker.rs`: [`Worker`]: `new`, `run`, `stop`, `serve`.
//! - `memory` (feature `models`): in-memory reference models of the lease
//!   service and the repository, for tests, simulations and demos.
//! - `pg` (feature `postgres`): the PostgreSQL adapters and a wall clock on
//!   tokio.
//! - `runner` (feature `runner`): flags and environment to a worker on
//!   PostgreSQL, what the `retention-worker` binary runs.
//!
//! The worker is runtime-agnostic (it only needs the injected clock) and
//! deterministic: it reads no wall clock, draws no randomness of its own and
//! resolves every race between timers and events in a fixed order.

#[cfg(feature = "models")]
pub mod memory;
#[cfg(feature = "postgres")]
pub mod pg;
#[cfg(feature = "runner")]
pub mod runner;

mod config;
mod lease;
mod ports;
mod report;
mod state;
mod term;
mod watched;
mod worker;

pub use config::{ConfigError, MAX_BATCH_SIZE, MAX_TERM_ROW_CAP, WorkerConfig};
pub use lease::{CallError, CallErrorKind, FenceRejection, Lease};
pub use ports::{Clock, Jitter, LeaseService, RecordsRepository, SeededJitter};
pub use report::{LossCause, ReleaseOutcome, RunError, ServeSummary, TermEnd, TermReport};
pub use worker::{Dependencies, Worker};
