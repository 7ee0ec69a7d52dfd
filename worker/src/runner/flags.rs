//! The runner's flags and environment variables; every default is
//! [`WorkerConfig::default`]'s or [`PgOptions::default`]'s, never restated.

use std::fmt;

use crate::WorkerConfig;
use crate::pg::{PgOptions, redact_url};

/// What the runner does, from flags or the environment (flags win). The
/// defaults are [`WorkerConfig::default`]'s and [`PgOptions::default`]'s.
#[derive(Clone, clap::Parser)]
#[command(name = "retention-worker", version, about, args_override_self = true)]
#[non_exhaustive]
pub struct RunnerConfig {
    /// PostgreSQL to connect to: `postgres://user:pass@host:port/db`.
    /// Its value is never shown: not in `--help`, errors or logs.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
    /// This replica's lease owner id; unique per replica. Default: the host
    /// name and process id.
    #[arg(long, env = "RETENTION_OWNER_ID")]
    pub owner_id: Option<String>,
    /// The lease row replicas compete for.
    #[arg(long, env = "RETENTION_LEASE_NAME", default_value_t = PgOptions::default().lease_name)]
    pub lease_name: String,
    /// Delete rows older than this.
    #[arg(long, env = "RETENTION_MS", default_value_t = WorkerConfig::default().retention_ms)]
    pub retention_ms: u64,
    /// Rows per delete, 1..=200.
    #[arg(long, env = "RETENTION_BATCH_SIZE", default_value_t = WorkerConfig::default().batch_size)]
    pub batch_size: u32,
    /// Rows per term, 1..=1000.
    #[arg(long, env = "RETENTION_TERM_ROW_CAP", default_value_t = WorkerConfig::default().term_row_cap)]
    pub term_row_cap: u32,
    /// TTL of granted leases, timed by the database's clock.
    #[arg(long, env = "RETENTION_LEASE_TTL_MS", default_value_t = WorkerConfig::default().lease_ttl_ms)]
    pub lease_ttl_ms: u64,
    /// Pause between one renewal's answer and the next renewal.
    #[arg(long, env = "RETENTION_RENEW_INTERVAL_MS", default_value_t = WorkerConfig::default().renew_interval_ms)]
    pub renew_interval_ms: u64,
    /// No delete starts this close to the lease's expiry.
    #[arg(long, env = "RETENTION_EXPIRY_MARGIN_MS", default_value_t = WorkerConfig::default().expiry_margin_ms)]
    pub expiry_margin_ms: u64,
    /// Pause between terms.
    #[arg(long, env = "RETENTION_TERM_INTERVAL_MS", default_value_t = WorkerConfig::default().term_interval_ms)]
    pub term_interval_ms: u64,
    /// Pause after a term that lost leadership.
    #[arg(long, env = "RETENTION_LOSS_BACKOFF_MS", default_value_t = WorkerConfig::default().loss_backoff_ms)]
    pub loss_backoff_ms: u64,
    /// Up to this much random delay is added to every pause.
    #[arg(long, env = "RETENTION_TERM_JITTER_MS_MAX", default_value_t = WorkerConfig::default().term_jitter_ms_max)]
    pub term_jitter_ms_max: u64,
    /// A database call with no answer after this long counts as ambiguous;
    /// its statement is then cancelled. Default: a sixth of the lease TTL.
    #[arg(long, env = "RETENTION_CALL_TIMEOUT_MS")]
    pub call_timeout_ms: Option<u64>,
    /// The server cancels any statement running longer (`statement_timeout`).
    /// Default: a sixth of the lease TTL.
    #[arg(long, env = "RETENTION_STATEMENT_TIMEOUT_MS")]
    pub statement_timeout_ms: Option<u64>,
    /// The server fails a statement whose one lock acquisition attempt
    /// waited this long (`lock_timeout`; each attempt has its own, only the
    /// statement timeout bounds the total). Default: a sixth of the lease TTL.
    #[arg(long, env = "RETENTION_LOCK_TIMEOUT_MS")]
    pub lock_timeout_ms: Option<u64>,
    /// The server ends a session idle this long inside a transaction
    /// (`idle_in_transaction_session_timeout`). Call timeout + statement
    /// timeout + this must stay below the lease TTL. Default: a sixth of the
    /// lease TTL.
    #[arg(long, env = "RETENTION_IDLE_IN_TRANSACTION_TIMEOUT_MS")]
    pub idle_in_transaction_timeout_ms: Option<u64>,
    /// The longest a commit may wait for a synchronous standby that you
    /// vouch for (PostgreSQL bounds that wait by nothing); required when the
    /// server's commits wait for one. Counted in the lock-hold rule.
    /// Default 0: commits do not wait for a standby.
    #[arg(long, env = "RETENTION_COMMIT_WAIT_MS_MAX", default_value_t = 0)]
    pub commit_wait_ms_max: u64,
    /// TCP keepalive idle time on both ends of every connection. Default: a
    /// sixth of the lease TTL, at least 1 s.
    #[arg(long, env = "RETENTION_KEEPALIVE_IDLE_MS")]
    pub keepalive_idle_ms: Option<u64>,
    /// Connections in the pool (a term uses two at most: renew and delete).
    #[arg(long, env = "RETENTION_POOL_SIZE", default_value_t = 4)]
    pub pool_size: usize,
    /// Run one term and exit (for cron): exit status 0 unless the term failed.
    #[arg(long)]
    pub once: bool,
    /// Do not apply the shipped migrations at start. From the environment:
    /// true/false, 1/0, yes/no or on/off.
    #[arg(
        long,
        env = "RETENTION_SKIP_MIGRATIONS",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub skip_migrations: bool,
}

/// Debug output may reach logs and bug reports: the URL's password is hidden.
impl fmt::Debug for RunnerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunnerConfig")
            .field("database_url", &redact_url(&self.database_url))
            .field("owner_id", &self.owner_id)
            .field("lease_name", &self.lease_name)
            .field("retention_ms", &self.retention_ms)
            .field("batch_size", &self.batch_size)
            .field("term_row_cap", &self.term_row_cap)
            .field("lease_ttl_ms", &self.lease_ttl_ms)
            .field("renew_interval_ms", &self.renew_interval_ms)
            .field("expiry_margin_ms", &self.expiry_margin_ms)
            .field("term_interval_ms", &self.term_interval_ms)
            .field("loss_backoff_ms", &self.loss_backoff_ms)
            .field("term_jitter_ms_max", &self.term_jitter_ms_max)
            .field("call_timeout_ms", &self.call_timeout_ms)
            .field("statement_timeout_ms", &self.statement_timeout_ms)
            .field("lock_timeout_ms", &self.lock_timeout_ms)
            .field(
                "idle_in_transaction_timeout_ms",
                &self.idle_in_transaction_timeout_ms,
            )
            .field("commit_wait_ms_max", &self.commit_wait_ms_max)
            .field("keepalive_idle_ms", &self.keepalive_idle_ms)
            .field("pool_size", &self.pool_size)
            .field("once", &self.once)
            .field("skip_migrations", &self.skip_migrations)
            .finish()
    }
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
    /// The adapters' options these flags describe: the bounds not given are
    /// [`PgOptions::for_lease_ttl`]'s for the lease TTL.
    pub fn pg_options(&self) -> PgOptions {
        let derived = PgOptions::for_lease_ttl(self.lease_ttl_ms);
        PgOptions {
            lease_name: self.lease_name.clone(),
            call_timeout_ms: self.call_timeout_ms.unwrap_or(derived.call_timeout_ms),
            statement_timeout_ms: self
                .statement_timeout_ms
                .unwrap_or(derived.statement_timeout_ms),
            lock_timeout_ms: self.lock_timeout_ms.unwrap_or(derived.lock_timeout_ms),
            idle_in_transaction_timeout_ms: self
                .idle_in_transaction_timeout_ms
                .unwrap_or(derived.idle_in_transaction_timeout_ms),
            keepalive_idle_ms: self.keepalive_idle_ms.unwrap_or(derived.keepalive_idle_ms),
            commit_wait_ms_max: self.commit_wait_ms_max,
            retention_ms: self.retention_ms,
            ..derived
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

/// For a refused value the environment gave (clap names only the flag):
/// `note: the value came from RETENTION_BATCH_SIZE in the environment`.
/// `args` are the command line's words; a flag given there is not noted.
/// A value that is not UTF-8 (clap says only "invalid UTF-8 was detected
/// in one or more arguments") is named too: the variable, or the word.
pub fn environment_note(error: &clap::Error, args: &[String]) -> Option<String> {
    use clap::CommandFactory;
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() == ErrorKind::InvalidUtf8 {
        return Some(not_utf8_note(args));
    }
    let Some(ContextValue::String(invalid)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    let long = invalid.strip_prefix("--")?.split([' ', '=']).next()?;
    let command = RunnerConfig::command();
    let arg = command
        .get_arguments()
        .find(|arg| arg.get_long() == Some(long))?;
    let flag = format!("--{long}");
    let given = args
        .iter()
        .any(|word| *word == flag || word.starts_with(&format!("{flag}=")));
    let variable = arg.get_env()?.to_str()?;
    (!given && std::env::var_os(variable).is_some())
        .then(|| format!("note: the value came from {variable} in the environment"))
}

/// Which value is not UTF-8: a word of the command line (`args`, read
/// lossily, so it holds U+FFFD), or else a variable a flag reads.
fn not_utf8_note(args: &[String]) -> String {
    use clap::CommandFactory;
    if let Some((index, word)) =
        (args.iter().enumerate().skip(1)).find(|(_, w)| w.contains('\u{FFFD}'))
    {
        return format!("note: word {index} of the command line ({word:?}) is not UTF-8");
    }
    let command = RunnerConfig::command();
    let variables: Vec<&str> = (command.get_arguments())
        .filter_map(|arg| arg.get_env()?.to_str())
        .filter(|variable| std::env::var_os(variable).is_some_and(|v| v.to_str().is_none()))
        .collect();
    match variables.as_slice() {
        [] => "note: a value given is not UTF-8".into(),
        [name] => format!("note: {name} in the environment is not UTF-8; every value is text"),
        names => format!(
            "note: {} in the environment are not UTF-8; every value is text",
            names.join(" and ")
        ),
    }
}

/// `host-pid`, or `replica-pid` when the host name is unknown or blank: two
/// replicas on one host still differ.
pub fn default_owner_id(host: Option<&str>, pid: u32) -> String {
    let host = host.map(str::trim).filter(|name| !name.is_empty());
    format!("{}-{pid}", host.unwrap_or("replica"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::RunnerConfig;
    use crate::WorkerConfig;
    use crate::pg::PgOptions;

    #[test]
    fn with_no_flags_the_runner_runs_the_documented_defaults() {
        let config = RunnerConfig::try_parse_from(["retention-worker", "--database-url", "x"])
            .expect("only the URL is required");
        assert_eq!(config.worker_config(), WorkerConfig::default());
        // The adapter enforces the worker's retention a second time.
        let with_retention = PgOptions {
            retention_ms: WorkerConfig::default().retention_ms,
            ..PgOptions::default()
        };
        assert_eq!(config.pg_options(), with_retention);
    }

    #[test]
    fn the_bounds_not_given_are_derived_from_the_lease_ttl() {
        let flags = [
            "retention-worker",
            "--database-url",
            "x",
            "--lease-ttl-ms",
            "12000",
        ];
        let config =
            RunnerConfig::try_parse_from(flags.into_iter().chain(["--lock-timeout-ms", "700"]))
                .expect("valid flags");
        let pg = config.pg_options();
        let bounds = (
            pg.call_timeout_ms,
            pg.statement_timeout_ms,
            pg.lock_timeout_ms,
            pg.idle_in_transaction_timeout_ms,
            pg.keepalive_idle_ms,
        );
        assert_eq!(bounds, (2_000, 2_000, 700, 2_000, 2_000));
        assert_eq!(pg.longest_lock_hold_ms(), 6_000, "half the TTL");
        assert!(pg.validate().is_ok());
    }

    #[test]
    fn debug_output_hides_the_password() {
        let url = "postgres://app:hunter2@db:5432/prod";
        let config = RunnerConfig::try_parse_from(["retention-worker", "--database-url", url])
            .expect("valid flags");
        let shown = format!("{config:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("postgres://app:***@db:5432/prod"), "{shown}");
        assert!(shown.contains("pool_size: 4"), "{shown}");
    }
}
