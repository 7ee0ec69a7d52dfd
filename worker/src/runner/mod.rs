//! The deployable runner (cargo feature `runner`): flags and environment to
//! a worker on the PostgreSQL adapters, terms on a schedule or once, and a
//! shutdown that waits for the release. The process and its signals live in
//! the `retention-worker` binary; `flags.rs` holds [`RunnerConfig`].

mod flags;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::{Either, select};
use tracing::{info, warn};

pub use flags::{RunnerConfig, default_owner_id, environment_note};

use crate::pg::{
    PgLeaseService, PgRecords, SetupError, SystemClock, check_server, connect_pool, migrate, redact,
};
use crate::{
    ConfigError, Dependencies, RunError, SeededJitter, ServeSummary, TermEnd, TermReport, Worker,
};

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

impl RunnerError {
    /// A config error, named by the flag that sets the field.
    fn flag(error: ConfigError) -> Self {
        Self::Config {
            flag: format!("--{}", error.field.replace('_', "-")),
            error,
        }
    }
}

/// A rule broken by a bound the flags left to derive from the lease TTL
/// names the TTL too: the operator never gave the bound.
fn derived_from_ttl(config: &RunnerConfig, error: ConfigError) -> RunnerError {
    let given = match error.field {
        "call_timeout_ms" => config.call_timeout_ms.is_some(),
        "statement_timeout_ms" => config.statement_timeout_ms.is_some(),
        "lock_timeout_ms" => config.lock_timeout_ms.is_some(),
        "idle_in_transaction_timeout_ms" => config.idle_in_transaction_timeout_ms.is_some(),
        "keepalive_idle_ms" => config.keepalive_idle_ms.is_some(),
        _ => true,
    };
    let mut refused = RunnerError::flag(error);
    if let (false, RunnerError::Config { flag, .. }) = (given, &mut refused) {
        flag.push_str(&format!(
            " (not given: a sixth of --lease-ttl-ms {})",
            config.lease_ttl_ms
        ));
    }
    refused
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
    let options = config.pg_options();
    let owner = config.owner();
    // Every flag is checked before the database is touched: a mistake
    // found after the migrations, or hidden behind a connection error,
    // wastes an operator's time.
    worker_config
        .validate()
        .and_then(|()| options.validate())
        .and_then(|()| {
            let empty = owner.is_empty();
            let error = ConfigError {
                field: "owner_id",
                value: "\"\"".into(),
                rule: "must not be empty",
            };
            if empty { Err(error) } else { Ok(()) }
        })
        .and_then(|()| {
            let error = ConfigError {
                field: "pool_size",
                value: config.pool_size.to_string(),
                rule: "must be in 1..=1000 (a term uses two connections at most: a renewal \
                       beside a delete)",
            };
            if (1..=1_000).contains(&config.pool_size) {
                Ok(())
            } else {
                Err(error)
            }
        })
        .map_err(|error| derived_from_ttl(&config, error))?;
    // A driver's message may quote the URL or the password it was given.
    let setup =
        |error: SetupError| RunnerError::Setup(SetupError(redact(&error.0, &config.database_url)));
    let pool = connect_pool(&config.database_url, config.pool_size, &options).map_err(setup)?;
    // A server that accepts connections and never answers (a hung server,
    // a stuck pooler) must not hold the start for ever: each setup step is
    // bounded by the lease TTL, as a term's calls are by the call timeout.
    let bound = std::time::Duration::from_millis(options.lease_ttl_ms);
    let bounded = |step: &'static str| {
        move |_| {
            RunnerError::Setup(SetupError(format!(
                "{step}: no answer from PostgreSQL within {} ms (the lease TTL)",
                bound.as_millis()
            )))
        }
    };
    if !config.skip_migrations {
        let applied = tokio::time::timeout(bound, migrate(&pool))
            .await
            .map_err(bounded("migrate"))?
            .map_err(setup)?;
        info!(?applied, "schema up to date");
    }
    tokio::time::timeout(bound, check_server(&pool, &options))
        .await
        .map_err(bounded("reading the server's commit settings"))?
        .map_err(setup)?;
    let deps = Dependencies {
        clock: SystemClock,
        leases: PgLeaseService::new(pool.clone(), options.clone()),
        records: PgRecords::new(pool, options),
    };
    let worker =
        Arc::new(Worker::new(owner.clone(), worker_config, deps).map_err(RunnerError::flag)?);
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
