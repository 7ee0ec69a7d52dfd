//! The deployable runner: flags and environment to a worker on PostgreSQL,
//! terms on a schedule or once, and a shutdown that waits for the release.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::{Either, select};
use tracing::{info, warn};

use super::{PgLeaseService, PgOptions, PgRecords, SetupError, SystemClock, connect_pool, migrate};
use crate::{
    ConfigError, Dependencies, RunError, SeededJitter, ServeSummary, TermEnd, TermReport, Worker,
    WorkerConfig,
};

/// What the runner does, from flags or the environment (flags win). The
/// defaults are [`WorkerConfig::default`]'s and [`PgOptions::default`]'s.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "retention-worker", version, about, args_override_self = true)]
#[non_exhaustive]
pub struct RunnerConfig {
    /// PostgreSQL to connect to: `postgres://user:pass@host:port/db`.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: String,
    /// This replica's lease owner id; unique per replica. Default: the host
    /// name and process id.
    #[arg(long, env = "RETENTION_OWNER_ID")]
    pub owner_id: Option<String>,
    /// The lease row replicas compete for.
    #[arg(long, env = "RETENTION_LEASE_NAME", default_value = "retention")]
    pub lease_name: String,
    /// Delete rows older than this (30 days by default).
    #[arg(long, env = "RETENTION_MS", default_value_t = 2_592_000_000)]
    pub retention_ms: u64,
    /// Rows per delete, 1..=200.
    #[arg(long, env = "RETENTION_BATCH_SIZE", default_value_t = 200)]
    pub batch_size: u32,
    /// Rows per term, 1..=1000.
    #[arg(long, env = "RETENTION_TERM_ROW_CAP", default_value_t = 1_000)]
    pub term_row_cap: u32,
    /// TTL of granted leases, timed by the database's clock.
    #[arg(long, env = "RETENTION_LEASE_TTL_MS", default_value_t = 30_000)]
    pub lease_ttl_ms: u64,
    /// Pause between one renewal's answer and the next renewal.
    #[arg(long, env = "RETENTION_RENEW_INTERVAL_MS", default_value_t = 10_000)]
    pub renew_interval_ms: u64,
    /// No delete starts this close to the lease's expiry.
    #[arg(long, env = "RETENTION_EXPIRY_MARGIN_MS", default_value_t = 2_000)]
    pub expiry_margin_ms: u64,
    /// Pause between terms.
    #[arg(long, env = "RETENTION_TERM_INTERVAL_MS", default_value_t = 60_000)]
    pub term_interval_ms: u64,
    /// Pause after a term that lost leadership.
    #[arg(long, env = "RETENTION_LOSS_BACKOFF_MS", default_value_t = 30_000)]
    pub loss_backoff_ms: u64,
    /// Up to this much random delay is added to every pause.
    #[arg(long, env = "RETENTION_TERM_JITTER_MS_MAX", default_value_t = 5_000)]
    pub term_jitter_ms_max: u64,
    /// A database call with no answer after this long counts as ambiguous.
    #[arg(long, env = "RETENTION_CALL_TIMEOUT_MS", default_value_t = 5_000)]
    pub call_timeout_ms: u64,
    /// Connections in the pool (a term uses two at most: renew and delete).
    #[arg(long, env = "RETENTION_POOL_SIZE", default_value_t = 4)]
    pub pool_size: usize,
    /// Run one term and exit (for cron): exit status 0 unless the term failed.
    #[arg(long)]
    pub once: bool,
    /// Do not apply the shipped migrations at start.
    #[arg(long, env = "RETENTION_SKIP_MIGRATIONS")]
    pub skip_migrations: bool,
}

impl RunnerConfig {
    /// The worker's configuration these flags describe.
    pub fn worker_config(&self) -> WorkerConfig {
        WorkerConfig {
            batch_size: self.batch_size,
            term_row_cap: self.term_row_cap,
            retention_ms: self.retention_ms,
            lease_ttl_ms: self.lease_ttl_ms,
            renew_interval_ms: self.renew_interval_ms,
            expiry_margin_ms: self.expiry_margin_ms,
            term_interval_ms: self.term_interval_ms,
            loss_backoff_ms: self.loss_backoff_ms,
            term_jitter_ms_max: self.term_jitter_ms_max,
        }
    }

    /// The adapters' options these flags describe.
    pub fn pg_options(&self) -> PgOptions {
        PgOptions {
            lease_name: self.lease_name.clone(),
            lease_ttl_ms: self.lease_ttl_ms,
            call_timeout_ms: self.call_timeout_ms,
        }
    }

    /// The lease owner id: `--owner-id`, or [`default_owner_id`] of this
    /// host and process.
    pub fn owner(&self) -> String {
        self.owner_id.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME")
                .ok()
                .or_else(|| std::fs::read_to_string("/etc/hostname").ok());
            default_owner_id(host.as_deref(), std::process::id())
        })
    }
}

/// `host-pid`, or `replica-pid` when the host name is unknown or blank: two
/// replicas on one host still differ.
pub fn default_owner_id(host: Option<&str>, pid: u32) -> String {
    let host = host.map(str::trim).filter(|name| !name.is_empty());
    format!("{}-{pid}", host.unwrap_or("replica"))
}

/// What the runner did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunnerOutcome {
    /// `--once`: the term's report.
    Once(TermReport),
    /// The service loop's totals, after shutdown.
    Served(ServeSummary),
    /// Shutdown came before the first term began.
    StoppedBeforeStart,
}

impl RunnerOutcome {
    /// Whether the process should exit with a failure status: a `--once`
    /// term whose acquire or delete failed. Losing the lease to another
    /// replica is not a failure.
    pub fn failed(&self) -> bool {
        matches!(
            self,
            Self::Once(TermReport {
                end: TermEnd::AcquireFailed(_) | TermEnd::DeleteFailed(_),
                ..
            })
        )
    }
}

/// Why the runner could not run.
#[derive(Debug)]
pub enum RunnerError {
    /// A flag breaks a rule; `flag` is its name.
    Config {
        /// The flag, e.g. `--renew-interval-ms`.
        flag: String,
        /// The rule, with the value.
        error: ConfigError,
    },
    /// The database could not be reached or migrated.
    Setup(SetupError),
    /// The worker task panicked or was cancelled.
    Task(String),
}

impl fmt::Display for RunnerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config { flag, error } => {
                write!(f, "{flag} = {}: {}", error.value, error.rule)
            }
            Self::Setup(error) => write!(f, "{error}"),
            Self::Task(why) => write!(f, "worker task: {why}"),
        }
    }
}

impl std::error::Error for RunnerError {}

/// Runs the worker as `config` says until its work is done (`--once`) or
/// `shutdown` resolves. On shutdown it calls `stop()` and returns only once
/// the term in progress has settled and its lease is released.
pub async fn run_runner(
    config: RunnerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<RunnerOutcome, RunnerError> {
    let worker_config = config.worker_config();
    worker_config
        .validate()
        .map_err(|error| RunnerError::Config {
            flag: format!("--{}", error.field.replace('_', "-")),
            error,
        })?;
    let pool = connect_pool(&config.database_url, config.pool_size).map_err(RunnerError::Setup)?;
    if !config.skip_migrations {
        let applied = migrate(&pool).await.map_err(RunnerError::Setup)?;
        info!(?applied, "schema up to date");
    }
    let options = config.pg_options();
    let deps = Dependencies {
        clock: SystemClock,
        leases: PgLeaseService::new(pool.clone(), options.clone()),
        records: PgRecords::new(pool, options),
    };
    let owner = config.owner();
    let worker = Arc::new(
        Worker::new(owner.clone(), worker_config, deps).map_err(|error| RunnerError::Config {
            flag: format!("--{}", error.field.replace('_', "-")),
            error,
        })?,
    );
    info!(owner = %owner, once = config.once, "retention worker started");
    let serving = worker.clone();
    let once = config.once;
    let task = tokio::spawn(async move {
        if once {
            serving.run().await.map(RunnerOutcome::Once)
        } else {
            let start_nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.subsec_nanos());
            let mut jitter = SeededJitter::new(jitter_seed(&owner, start_nanos));
            serving
                .serve(&mut jitter, |_| {})
                .await
                .map(RunnerOutcome::Served)
        }
    });
    let task = match select(task, Box::pin(shutdown)).await {
        Either::Left((done, _)) => done,
        Either::Right(((), task)) => {
            info!("shutdown requested: stopping after the term settles");
            worker.stop().await;
            task.await
        }
    };
    match task {
        Ok(Ok(outcome)) => {
            info!(?outcome, "retention worker exiting");
            Ok(outcome)
        }
        Ok(Err(RunError::Stopped)) => Ok(RunnerOutcome::StoppedBeforeStart),
        Ok(Err(RunError::AlreadyRunning)) => {
            unreachable!("the runner owns its worker and runs it once")
        }
        Err(error) => {
            warn!(%error, "worker task ended abnormally");
            Err(RunnerError::Task(error.to_string()))
        }
    }
}

/// Replicas started together should not contend in lockstep: the jitter's
/// seed mixes the owner id (distinct per replica) with the start instant.
pub fn jitter_seed(owner: &str, start_nanos: u32) -> u64 {
    fnv1a64(owner.as_bytes()) ^ u64::from(start_nanos)
}

/// FNV-1a, 64 bits: a stable hash (std's hasher is seeded per process).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::{fnv1a64, jitter_seed};

    #[test]
    fn the_hash_matches_the_published_fnv1a_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn replicas_and_restarts_get_different_seeds() {
        assert_ne!(jitter_seed("r1", 5), jitter_seed("r2", 5));
        assert_ne!(jitter_seed("r1", 5), jitter_seed("r1", 6));
        assert_eq!(jitter_seed("r1", 5), jitter_seed("r1", 5));
        // The instant is mixed in bit by bit, not merely added in.
        assert_eq!(jitter_seed("", 3), 0xcbf2_9ce4_8422_2326);
    }
}
