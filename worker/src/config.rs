//! Worker configuration, its documented defaults, and validation.

use std::fmt;

/// The largest batch one delete may ask for (CAP-1).
pub const MAX_BATCH_SIZE: u32 = 200;
/// The most rows one term may delete (CAP-1).
pub const MAX_TERM_ROW_CAP: u32 = 1_000;

/// How a worker behaves. Every field is public; start from
/// [`WorkerConfig::default`] and change what you need.
/// [`crate::Worker::new`] validates it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerConfig {
    /// Rows asked for per delete, `1..=200`. Default: 200.
    pub batch_size: u32,
    /// Rows one term may delete before it yields, `1..=1000`. Default: 1,000.
    pub term_row_cap: u32,
    /// Rows older than the term's grant less `retention_ms` are deleted:
    /// the grant's instant on the database's clock, captured once per term
    /// (CUT-1), so that no row goes early by that clock; must be > 0.
    /// Default: 30 days.
    pub retention_ms: u64,
    /// The TTL the lease service grants; must be the service's own. The
    /// worker reads expiry from each lease, checks with this that the
    /// renewal schedule can keep a lease alive, and finds a grant's instant
    /// on the service's clock as its expiry less this (the term's cutoff).
    /// Default: 30 s.
    pub lease_ttl_ms: u64,
    /// Pause between the end of one renewal and the start of the next; must
    /// be > 0 and, with `expiry_margin_ms`, fit inside `lease_ttl_ms`.
    /// Default: 10 s.
    pub renew_interval_ms: u64,
    /// No delete starts once the held lease is this close to expiry on the
    /// worker's clock; it absorbs clock skew and the delete's own latency.
    /// Default: 2 s.
    pub expiry_margin_ms: u64,
    /// Service loop: pause between terms. Default: 60 s.
    pub term_interval_ms: u64,
    /// Service loop: after a term that lost leadership, pause this long
    /// instead of `term_interval_ms` before contending again. Default: 30 s.
    pub loss_backoff_ms: u64,
    /// Service loop: a jitter in `0..=term_jitter_ms_max` is added to every
    /// pause so that replicas do not contend in lockstep. Default: 5 s.
    pub term_jitter_ms_max: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            batch_size: MAX_BATCH_SIZE,
            term_row_cap: MAX_TERM_ROW_CAP,
            retention_ms: 30 * 24 * 60 * 60 * 1_000,
            lease_ttl_ms: 30_000,
            renew_interval_ms: 10_000,
            expiry_margin_ms: 2_000,
            term_interval_ms: 60_000,
            loss_backoff_ms: 30_000,
            term_jitter_ms_max: 5_000,
        }
    }
}

impl WorkerConfig {
    /// Checks every rule and reports the first field that breaks one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let check = |ok: bool, field: &'static str, value: u64, rule: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError {
                    field,
                    value: value.to_string(),
                    rule,
                })
            }
        };
        for (field, count, most, rule) in [
            (
                "batch_size",
                self.batch_size,
                MAX_BATCH_SIZE,
                "must be in 1..=200 (CAP-1)",
            ),
            (
                "term_row_cap",
                self.term_row_cap,
                MAX_TERM_ROW_CAP,
                "must be in 1..=1000 (CAP-1)",
            ),
        ] {
            check((1..=most).contains(&count), field, count.into(), rule)?;
        }
        check(
            self.retention_ms > 0,
            "retention_ms",
            self.retention_ms,
            "must be > 0",
        )?;
        check(
            i64::try_from(self.retention_ms).is_ok(),
            "retention_ms",
            self.retention_ms,
            "must fit in an i64 of milliseconds",
        )?;
        check(
            self.lease_ttl_ms > 0,
            "lease_ttl_ms",
            self.lease_ttl_ms,
            "must be > 0",
        )?;
        // A database that refuses at once (a connection refused in
        // microseconds) would otherwise be hammered in a busy loop.
        for (field, pause_ms) in [
            ("term_interval_ms", self.term_interval_ms),
            ("loss_backoff_ms", self.loss_backoff_ms),
        ] {
            check(
                pause_ms > 0,
                field,
                pause_ms,
                "must be > 0: with no pause between terms, a database that refuses at \
                 once makes the worker spin",
            )?;
        }
        let interval = self.renew_interval_ms;
        check(interval > 0, "renew_interval_ms", interval, "must be > 0")?;
        check(
            interval < self.lease_ttl_ms,
            "renew_interval_ms",
            interval,
            "must be shorter than lease_ttl_ms",
        )?;
        check(
            self.expiry_margin_ms < self.lease_ttl_ms - interval,
            "expiry_margin_ms",
            self.expiry_margin_ms,
            "must be shorter than lease_ttl_ms - renew_interval_ms, \
             or deletes would stall before every renewal",
        )
    }
}

/// A field of [`WorkerConfig`] (or of the PostgreSQL adapters' options)
/// that breaks its rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The offending field's name, as written in its struct.
    pub field: &'static str,
    /// The value it had, as written in Rust source.
    pub value: String,
    /// The rule it breaks.
    pub rule: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid worker config: {} = {} {}",
            self.field, self.value, self.rule
        )
    }
}

impl std::error::Error for ConfigError {}
