//! The adapters' settings, the server-side bounds derived from them, and the
//! rule that keeps a stalled client from holding the lease row past its TTL.

use std::time::Duration;

use crate::{ConfigError, WorkerConfig};

/// Settings shared by both adapters and the pool that serves them.
///
/// Every connection carries server-side bounds that PostgreSQL enforces by
/// itself, so a client that froze (a GC pause, SIGSTOP), lost its network
/// or died cannot keep the fence's share lock on the lease row: see
/// [`PgOptions::longest_lock_hold_ms`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    /// The lease row's name; replicas that compete share it. Default:
    /// `"retention"`.
    pub lease_name: String,
    /// TTL of every granted lease, timed by the database's clock.
    /// Default: [`WorkerConfig::default`]'s `lease_ttl_ms` (30 s).
    pub lease_ttl_ms: u64,
    /// A call with no answer after this long fails as ambiguous; the
    /// adapter then cancels its statement and closes its connection.
    /// Default: a sixth of the TTL (5 s).
    pub call_timeout_ms: u64,
    /// `statement_timeout`: the server cancels any statement, lock waits
    /// included, that runs longer. Default: a sixth of the TTL (5 s).
    pub statement_timeout_ms: u64,
    /// `lock_timeout`: the server fails a statement whose one lock
    /// acquisition attempt waited this long (a renewal or a successor's
    /// acquire behind a delete). Each attempt gets its own: a statement
    /// queued behind several holders in turn may wait longer in all, which
    /// only `statement_timeout_ms` bounds. Default: a sixth of the TTL (5 s).
    pub lock_timeout_ms: u64,
    /// `idle_in_transaction_session_timeout`: the server ends a session that
    /// left a transaction open and sent nothing for this long, rolling it
    /// back. Default: a sixth of the TTL (5 s).
    pub idle_in_transaction_timeout_ms: u64,
    /// The longest a commit may wait to be durable that the operator
    /// vouches for: with `synchronous_commit` waiting for a synchronous
    /// standby, every commit (a lease grant, a delete's `COMMIT`) keeps its
    /// locks until the standby answers, and no PostgreSQL setting bounds
    /// that wait. Default 0: the worker's sessions do not wait for a
    /// standby (the runner checks the server, see [`PgOptions::commit_wait`]).
    pub commit_wait_ms_max: u64,
    /// The worker's retention, enforced a second time by the delete itself
    /// on the database's clock (see `DELETE_OLDEST`); 0 turns that bound
    /// off. Default 0; the runner sets its `--retention-ms`. Set it to the
    /// worker's `retention_ms`, never longer (a longer one holds back rows
    /// the worker means to delete).
    pub retention_ms: u64,
    /// TCP keepalive idle time, on the client's socket and the server's
    /// (`tcp_keepalives_idle`); probes follow every second, three of them.
    /// Default: a sixth of the TTL, at least 1 s (5 s).
    pub keepalive_idle_ms: u64,
}

/// Keepalive probes after the idle time: their spacing and how many go
/// unanswered before the peer counts as gone.
const KEEPALIVE_INTERVAL_MS: u64 = 1_000;
/// Linux refuses a longer keepalive idle time (`TCP_KEEPIDLE`, 32,767 s):
/// every connection would then fail to open.
const KEEPALIVE_IDLE_MS_MAX: u64 = 32_767_000;
/// PostgreSQL's timeouts are `int` milliseconds: a longer one is refused
/// when the connection starts.
const SERVER_TIMEOUT_MS_MAX: u64 = i32::MAX as u64;
const KEEPALIVE_RETRIES: u32 = 3;

impl Default for PgOptions {
    /// [`PgOptions::for_lease_ttl`] of [`WorkerConfig::default`]'s TTL
    /// (30 s): every bound 5 s.
    fn default() -> Self {
        Self::for_lease_ttl(WorkerConfig::default().lease_ttl_ms)
    }
}

impl PgOptions {
    /// Options for leases of `lease_ttl_ms`, every bound derived from it: the
    /// call timeout, `statement_timeout`, `lock_timeout`,
    /// `idle_in_transaction_session_timeout` and the keepalive idle time are
    /// each a sixth of the TTL (the keepalive at least 1 s), so a stalled
    /// holder's lock goes within half the TTL
    /// ([`PgOptions::longest_lock_hold_ms`]).
    pub fn for_lease_ttl(lease_ttl_ms: u64) -> Self {
        let sixth_ms = lease_ttl_ms / 6;
        Self {
            lease_name: "retention".to_owned(),
            lease_ttl_ms,
            call_timeout_ms: sixth_ms,
            statement_timeout_ms: sixth_ms,
            lock_timeout_ms: sixth_ms,
            idle_in_transaction_timeout_ms: sixth_ms,
            commit_wait_ms_max: 0,
            retention_ms: 0,
            keepalive_idle_ms: sixth_ms.clamp(1_000, KEEPALIVE_IDLE_MS_MAX),
        }
    }

    /// The longest a client can hold a lock on the lease row once it
    /// stopped taking part (froze, lost its network, died without closing
    /// its socket): up to `call_timeout_ms` of a delete it was still
    /// running normally (any longer and it gives up, cancels and closes the
    /// connection itself), then the statement the server was running, at
    /// most `statement_timeout_ms`, then an idle open transaction, at most
    /// `idle_in_transaction_timeout_ms`, after which the server rolls back;
    /// or a commit it sent waiting to be durable, at most
    /// `commit_wait_ms_max` (neither bound cuts that wait, and a client that
    /// is gone sends no cancel). A statement that fails inside the
    /// transaction releases everything at once, so it only shortens this.
    pub fn longest_lock_hold_ms(&self) -> u64 {
        self.call_timeout_ms
            .saturating_add(self.statement_timeout_ms)
            .saturating_add(self.idle_in_transaction_timeout_ms)
            .saturating_add(self.commit_wait_ms_max)
    }

    /// The longest one statement waits for the lease row before the server
    /// fails it (the caller retries later): `statement_timeout_ms`.
    /// `lock_timeout_ms` bounds each lock acquisition attempt, and a
    /// statement behind several holders makes one attempt per holder (and
    /// one more when the waiter ahead of it leaves), so only the statement's
    /// bound holds for the total. The statement's own commit may then wait
    /// up to `commit_wait_ms_max` more.
    pub fn longest_lock_wait_ms(&self) -> u64 {
        self.statement_timeout_ms
    }

    /// Whether the server's settings let a commit wait without a bound, read
    /// from `synchronous_commit` and `synchronous_standby_names` as a worker
    /// session sees them: `Err` names the settings when commits wait for a
    /// standby and `commit_wait_ms_max` is 0 (nothing then bounds how long
    /// a stalled holder keeps the lease row locked).
    pub fn commit_wait(&self, synchronous_commit: &str, standby_names: &str) -> Result<(), String> {
        let waits = !standby_names.trim().is_empty()
            && matches!(synchronous_commit, "on" | "remote_write" | "remote_apply");
        if waits && self.commit_wait_ms_max == 0 {
            return Err(format!(
                "the server's commits wait for a synchronous standby (synchronous_standby_names = \
                 '{standby_names}', synchronous_commit = {synchronous_commit}) and PostgreSQL bounds \
                 that wait by nothing: a commit keeps the lease row locked until the standby \
                 answers. Give --commit-wait-ms-max with the longest wait you vouch for (call + \
                 statement + idle-in-transaction timeouts + it must stay below the lease TTL), or \
                 let the worker's role commit without the standby (ALTER ROLE ... SET \
                 synchronous_commit = local), accepting that a failover may lose the last lease \
                 change (worker/README.md: Commits that wait)"
            ));
        }
        Ok(())
    }

    /// Checks the rules the bounds must keep; the error names the field.
    /// Zero is refused everywhere because PostgreSQL reads it as "no bound".
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("lease_ttl_ms", self.lease_ttl_ms),
            ("call_timeout_ms", self.call_timeout_ms),
            ("statement_timeout_ms", self.statement_timeout_ms),
            ("lock_timeout_ms", self.lock_timeout_ms),
            (
                "idle_in_transaction_timeout_ms",
                self.idle_in_transaction_timeout_ms,
            ),
        ];
        for (field, value) in positive {
            refuse_if(
                value == 0,
                field,
                value.to_string(),
                "must be > 0 (0 means no bound)",
            )?;
        }
        refuse_if(
            self.lease_name.is_empty(),
            "lease_name",
            "\"\"".into(),
            "must not be empty",
        )?;
        for (field, value) in [
            ("statement_timeout_ms", self.statement_timeout_ms),
            ("lock_timeout_ms", self.lock_timeout_ms),
            (
                "idle_in_transaction_timeout_ms",
                self.idle_in_transaction_timeout_ms,
            ),
        ] {
            refuse_if(
                value > SERVER_TIMEOUT_MS_MAX,
                field,
                value.to_string(),
                "must be at most 2147483647 (PostgreSQL's limit for a timeout; the server would \
                 refuse every connection)",
            )?;
        }
        let ttl = self.lease_ttl_ms;
        for (field, value) in [
            ("statement_timeout_ms", self.statement_timeout_ms),
            ("lock_timeout_ms", self.lock_timeout_ms),
            ("commit_wait_ms_max", self.commit_wait_ms_max),
        ] {
            refuse_if(
                value >= ttl,
                field,
                value.to_string(),
                "must be shorter than lease_ttl_ms",
            )?;
        }
        refuse_if(
            !(1_000..ttl).contains(&self.keepalive_idle_ms)
                || self.keepalive_idle_ms > KEEPALIVE_IDLE_MS_MAX,
            "keepalive_idle_ms",
            self.keepalive_idle_ms.to_string(),
            "must be at least 1000 (the server counts whole seconds), at most 32767000 (Linux's \
             limit) and shorter than lease_ttl_ms",
        )?;
        let hold = self.longest_lock_hold_ms();
        refuse_if(
            hold >= ttl,
            "idle_in_transaction_timeout_ms",
            format!(
                "{} (call {} + statement {} + idle {} + commit wait {} = {hold} ms, TTL {ttl} ms)",
                self.idle_in_transaction_timeout_ms,
                self.call_timeout_ms,
                self.statement_timeout_ms,
                self.idle_in_transaction_timeout_ms,
                self.commit_wait_ms_max
            ),
            "makes call_timeout_ms + statement_timeout_ms + idle_in_transaction_timeout_ms + \
             commit_wait_ms_max reach lease_ttl_ms: a stalled holder's lock would outlast its lease",
        )
    }

    /// The bounds as libpq `options`: session settings the server applies
    /// at connection start, with no round trip of their own.
    pub(crate) fn server_settings(&self) -> String {
        let seconds = |ms: u64| ms.div_ceil(1_000);
        format!(
            "-c statement_timeout={} -c lock_timeout={} \
             -c idle_in_transaction_session_timeout={} -c tcp_keepalives_idle={} \
             -c tcp_keepalives_interval={} -c tcp_keepalives_count={KEEPALIVE_RETRIES}",
            self.statement_timeout_ms,
            self.lock_timeout_ms,
            self.idle_in_transaction_timeout_ms,
            seconds(self.keepalive_idle_ms),
            seconds(KEEPALIVE_INTERVAL_MS),
        )
    }

    /// Applies the bounds to a connection's configuration: the server's
    /// settings, and keepalives on the client's own socket.
    pub(crate) fn bound(&self, config: &mut tokio_postgres::Config) {
        config
            .options(self.server_settings())
            .keepalives(true)
            .keepalives_idle(Duration::from_millis(self.keepalive_idle_ms))
            .keepalives_interval(Duration::from_millis(KEEPALIVE_INTERVAL_MS))
            .keepalives_retries(KEEPALIVE_RETRIES);
    }
}

fn refuse_if(
    broken: bool,
    field: &'static str,
    value: String,
    rule: &'static str,
) -> Result<(), ConfigError> {
    if broken {
        Err(ConfigError { field, value, rule })
    } else {
        Ok(())
    }
}
