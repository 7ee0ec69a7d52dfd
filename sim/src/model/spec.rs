//! What one simulation run is: the seed, the world's shape, and the fault plan.
//!
//! A [`RunSpec`] is plain data with serde, so a failing run can be printed,
//! pasted back into `sim replay`, and saved as a scenario.

use retention_worker::WorkerConfig;
use serde::{Deserialize, Serialize};

use super::fault_knobs::FaultConfig;
use super::faults::FaultEvent;
use super::names::Flaw;

/// Everything that determines one run. Same spec, same history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunSpec {
    /// Drives madsim's scheduler and network and every draw of the run.
    pub seed: u64,
    /// Worker replicas, 1-5.
    pub replicas: u32,
    /// Simulated time at which every replica is stopped.
    pub duration_ms: u64,
    /// Rows older than the first term's cutoff at the start (the backlog).
    pub backlog_rows: u32,
    /// Rows spread over the minute after the first cutoff, so that they
    /// become eligible while the run goes on.
    pub boundary_rows: u32,
    /// New rows written every second during the run.
    pub arrivals_per_sec: u32,
    /// How long a client waits for any reply before it reports a timeout:
    /// the adapters' `call_timeout_ms` (`PgOptions`), which real mode sets
    /// from it and the simulated ports hold each call to. Plans, scenario
    /// files and tokens keep the name `rpc_timeout_ms`.
    pub rpc_timeout_ms: u64,
    /// The database's `statement_timeout`, as the adapters set it on every
    /// connection: a statement (a lock wait included) running longer fails.
    /// 0 turns the bound off, as in PostgreSQL.
    pub statement_timeout_ms: u64,
    /// The database's `lock_timeout`: a lease statement waiting this long
    /// for the lease row fails with nothing applied. 0: no bound.
    pub lock_timeout_ms: u64,
    /// The database's `idle_in_transaction_session_timeout`: a session that
    /// holds a transaction open and sends nothing this long is terminated and
    /// its transaction rolled back. 0: no bound.
    pub idle_in_transaction_timeout_ms: u64,
    /// The database spends a time uniform in `db_batch_ms_min..=db_batch_ms_max`
    /// on each delete before it commits it.
    pub db_batch_ms_min: u64,
    /// See `db_batch_ms_min`.
    pub db_batch_ms_max: u64,
    /// Each commit that wrote something (every lease statement that locked
    /// the row, every delete's `COMMIT`) is durable after a time uniform in
    /// `db_commit_ms_min..=db_commit_ms_max`: its flush and the synchronous
    /// standby's acknowledgement, during which it keeps its locks. Default
    /// 0: commits are instant.
    pub db_commit_ms_min: u64,
    /// See `db_commit_ms_min`.
    pub db_commit_ms_max: u64,
    /// The worker's configuration, shared by every replica.
    pub worker: WorkerSpec,
    /// Faults; all off by default.
    pub faults: FaultConfig,
    /// Timed events: pauses, crashes, stops, and faults on chosen calls.
    pub events: Vec<FaultEvent>,
    /// Each replica's clock skew, r1 first; when empty, drawn from
    /// `faults.clock_skew_ms_max`.
    pub skews_ms: Vec<i64>,
    /// Faults on chosen calls (`call_fault` events only) that `sim replay
    /// --delay-reply` and `--drop-reply` added to a recorded run. They act
    /// as the same events in `events` would, but start no task of the
    /// fault injector: a task more would change the simulator's schedule
    /// from the run's first instant, and the run must be the recorded one
    /// up to the call they change. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interventions: Vec<FaultEvent>,
    /// A branch of the run (`sim explain`): the recorded run up to its
    /// first event at or after `branch.at_ms`, and from there a fresh
    /// future, its randomness stirred by `branch.salt`. Simulator only.
    /// Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<Branch>,
    /// Events of `events` dropped or moved by `sim replay --drop-fault`
    /// and `--move-fault`, each still listed (see [`EventEdit`]). Default:
    /// none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_edits: Vec<EventEdit>,
    /// Run the flawed variant with this review finding instead of the real
    /// worker. Default: the real worker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flaw: Option<Flaw>,
}

impl Default for RunSpec {
    fn default() -> Self {
        Self {
            seed: 1,
            replicas: 3,
            duration_ms: 60_000,
            backlog_rows: 5_000,
            boundary_rows: 300,
            arrivals_per_sec: 5,
            rpc_timeout_ms: 2_500,
            // The adapters' bounds on the simulator's time scale: a lock
            // wait or statement may take a third of the 3 s lease, an idle
            // open transaction a sixth (production: 5 s each under 30 s).
            statement_timeout_ms: 1_000,
            lock_timeout_ms: 1_000,
            idle_in_transaction_timeout_ms: 500,
            db_batch_ms_min: 50,
            db_batch_ms_max: 400,
            db_commit_ms_min: 0,
            db_commit_ms_max: 0,
            worker: WorkerSpec::default(),
            faults: FaultConfig::default(),
            events: Vec::new(),
            skews_ms: Vec::new(),
            interventions: Vec::new(),
            branch: None,
            event_edits: Vec::new(),
            flaw: None,
        }
    }
}

/// Where a branch of a run parts from the run, and what its future is:
/// from the first event at or after `at_ms`, the simulator's scheduler and
/// network draws, the database's work and commit times, each replica's
/// fault draws and packet losses come from `salt`-stirred streams; the
/// plan's timed faults from `at_ms` on and its faults on calls made from
/// there on are dropped; and calls draw their faults with `faults`' knobs
/// (the plan's when `None`). The plan's events stay listed (each is a task
/// of the simulator, and one task fewer would change the run from its
/// start); the dropped ones do nothing. The worker's own term jitter is
/// not stirred (it is the worker's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Branch {
    /// The instant, on the run's time.
    pub at_ms: u64,
    /// Which of the futures.
    pub salt: u64,
    /// The call faults' knobs after the branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultConfig>,
}

/// One change to the plan's `events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventEdit {
    /// The event's place in `events`, from 0.
    pub index: usize,
    /// Its new instant; absent, the event is dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
}

/// The worker settings a run may change; the rest keep
/// [`WorkerConfig::default`]'s. Batch size and cap are production's; the
/// times are the simulator's own, ten or more times shorter than
/// production's so that a run covers many terms cheaply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSpec {
    /// See [`WorkerConfig::batch_size`]. Default: production's (200).
    pub batch_size: u32,
    /// See [`WorkerConfig::term_row_cap`]. Default: production's (1,000).
    pub term_row_cap: u32,
    /// See [`WorkerConfig::retention_ms`]. Default 1 hour.
    pub retention_ms: u64,
    /// The lease service's TTL. Default 3 s.
    pub lease_ttl_ms: u64,
    /// See [`WorkerConfig::renew_interval_ms`]. Default 1 s.
    pub renew_interval_ms: u64,
    /// See [`WorkerConfig::expiry_margin_ms`]. Default 300 ms.
    pub expiry_margin_ms: u64,
    /// See [`WorkerConfig::term_interval_ms`]. Default 4 s.
    pub term_interval_ms: u64,
    /// See [`WorkerConfig::loss_backoff_ms`]. Default 3 s.
    pub loss_backoff_ms: u64,
    /// See [`WorkerConfig::term_jitter_ms_max`]. Default 2 s.
    pub term_jitter_ms_max: u64,
}

impl Default for WorkerSpec {
    fn default() -> Self {
        let production = WorkerConfig::default();
        Self {
            batch_size: production.batch_size,
            term_row_cap: production.term_row_cap,
            // The simulator's time profile.
            retention_ms: 3_600_000,
            lease_ttl_ms: 3_000,
            renew_interval_ms: 1_000,
            expiry_margin_ms: 300,
            term_interval_ms: 4_000,
            loss_backoff_ms: 3_000,
            term_jitter_ms_max: 2_000,
        }
    }
}

impl WorkerSpec {
    /// The worker configuration these settings describe.
    pub fn config(&self) -> WorkerConfig {
        let mut config = WorkerConfig::default();
        config.batch_size = self.batch_size;
        config.term_row_cap = self.term_row_cap;
        config.retention_ms = self.retention_ms;
        config.lease_ttl_ms = self.lease_ttl_ms;
        config.renew_interval_ms = self.renew_interval_ms;
        config.expiry_margin_ms = self.expiry_margin_ms;
        config.term_interval_ms = self.term_interval_ms;
        config.loss_backoff_ms = self.loss_backoff_ms;
        config.term_jitter_ms_max = self.term_jitter_ms_max;
        config
    }
}

/// Why a spec cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The offending field, as a path (`events[2].replica`).
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

impl std::error::Error for SpecError {}
