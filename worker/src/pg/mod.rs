//! PostgreSQL adapters for the worker's ports and a wall clock on tokio
//! (cargo feature `postgres`); the runner that deploys them is `runner`.
//!
//! Map of the module:
//! - `schema.rs`: [`migrate`] applies the shipped migrations
//!   (`worker/migrations/*.sql`), once, under an advisory lock.
//! - `lease.rs`: [`PgLeaseService`], the lease service of `worker/CONTRACT.md` on one
//!   table row.
//! - `records.rs`: [`PgRecords`], the fenced delete (FEN-2) in one
//!   transaction.
//! - `options.rs`: [`PgOptions`], with the server-side bounds every pooled
//!   connection carries and the rule that keeps them shorter than the TTL.
//! - `clock.rs`: [`SystemClock`], the worker's clock on the wall clock and
//!   tokio timers.
//! - `secret.rs`: [`redact`] and [`redact_url`], so no message, log or
//!   help text shows the password a database URL carries.
//!
//! Every call is bounded by [`PgOptions::call_timeout_ms`] (on timeout the
//! adapter sends the server a cancel request and closes the connection) and
//! maps failures
//! to [`CallError`]: no connection or a statement the server refused is
//! `Rejected` (nothing applied); a lost connection or a timeout is
//! `Ambiguous` (it may have applied); a stale token is `Fenced`.

mod clock;
mod lease;
mod options;
mod records;
mod schema;
mod secret;

use std::fmt;
use std::time::Duration;

pub use clock::SystemClock;
pub use deadpool_postgres::Pool;
pub use lease::{ACQUIRE, PgLeaseService, RELEASE, RENEW};
pub use options::PgOptions;
pub use records::{DELETE_OLDEST, DeletedRow, FENCE, FencedDelete, PgRecords};
pub use schema::{MIGRATIONS, migrate};
pub use secret::{redact, redact_url};

use deadpool_postgres::Object;

use crate::{CallError, CallErrorKind};

/// A value the database applied, with the database's clock at the moment
/// it decided: for a lease, after the row lock was taken; for a delete, when
/// the fence was checked. Lets callers order effects by the database's view
/// (audit logs, and the checker's histories of real runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied<T> {
    /// What was applied.
    pub value: T,
    /// The database's clock, microseconds since the Unix epoch.
    pub at_us: i64,
}

/// Why a pool could not be built or the schema not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError(pub String);

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// `error` and each cause under it, once, joined by `: `: deadpool's and
/// tokio-postgres's own words ("db error", "error connecting to server")
/// leave out the server's message and SQLSTATE and the operating system's
/// error, which say what to fix.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let words = match next.downcast_ref::<tokio_postgres::error::DbError>() {
            Some(server) => format!("{} {}", server.code().code(), server.message()),
            None => next.to_string(),
        };
        if !text.contains(&words) {
            text = format!("{text}: {words}");
        }
        cause = next.source();
    }
    text.replace('\n', "; ")
}

/// A connection pool of at most `max_size` connections to `database_url`
/// (a `postgres://` URL or a libpq key=value string), each carrying
/// `options`' server-side bounds and keepalives (replacing any `options`
/// the URL names). Connections open lazily; a broken one is replaced on
/// next use.
pub fn connect_pool(
    database_url: &str,
    max_size: usize,
    options: &PgOptions,
) -> Result<Pool, SetupError> {
    if database_url.trim().is_empty() {
        return Err(SetupError("DATABASE_URL is empty".into()));
    }
    let mut config: tokio_postgres::Config = database_url.parse().map_err(|e| {
        SetupError(format!(
            "DATABASE_URL is not a PostgreSQL URL: {}",
            with_causes(&e)
        ))
    })?;
    if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
        return Err(SetupError(
            "DATABASE_URL asks for sslmode=require, but this build connects without TLS; \
             use sslmode=disable or prefer, or a TLS-terminating proxy"
                .into(),
        ));
    }
    options.bound(&mut config);
    let manager = deadpool_postgres::Manager::from_config(
        config,
        tokio_postgres::NoTls,
        deadpool_postgres::ManagerConfig {
            recycling_method: deadpool_postgres::RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(max_size.max(1))
        .build()
        .map_err(|e| SetupError(format!("connection pool: {}", with_causes(&e))))
}

/// Checks what the server would do to the lock-hold rule
/// ([`PgOptions::longest_lock_hold_ms`]) that no flag sets: whether its
/// commits wait for a synchronous standby, as a worker session sees the
/// settings (a role or database may override the server's).
pub async fn check_server(pool: &Pool, options: &PgOptions) -> Result<(), SetupError> {
    let client = pool
        .get()
        .await
        .map_err(|e| SetupError(format!("no database connection: {}", with_causes(&e))))?;
    let row = client
        .query_one(
            "SELECT current_setting('synchronous_commit'), \
                    current_setting('synchronous_standby_names')",
            &[],
        )
        .await
        .map_err(|e| {
            SetupError(format!(
                "reading the server's commit settings: {}",
                with_causes(&e)
            ))
        })?;
    options
        .commit_wait(row.get(0), row.get(1))
        .map_err(SetupError)
}

/// Runs `call` on a pooled connection under the timeout (waiting for the
/// connection counts); no answer in time is ambiguous. A connection whose
/// call ended ambiguously (timed out, or lost) is closed instead of handed
/// back: the server finishes what was sent on it regardless, and the next
/// call would queue behind that. Closing it is also what lets the server
/// roll back a transaction left open on it, once its statement ends.
async fn bounded<T>(
    pool: &Pool,
    options: &PgOptions,
    op: &str,
    call: impl AsyncFnOnce(&mut Object) -> Result<T, CallError>,
) -> Result<T, CallError> {
    let mut used = None;
    let timeout_ms = options.call_timeout_ms;
    let attempt = tokio::time::timeout(Duration::from_millis(timeout_ms), async {
        let connection = used.insert(client(pool, op).await?);
        call(connection).await
    })
    .await;
    let attempt_timed_out = attempt.is_err();
    let result = attempt.unwrap_or_else(|_| {
        Err(CallError::ambiguous(format!(
            "{op}: no answer from PostgreSQL within {timeout_ms} ms"
        )))
    });
    if matches!(&result, Err(error) if error.kind == CallErrorKind::Ambiguous) {
        if let Some(connection) = used.take() {
            if attempt_timed_out {
                cancel(&connection, timeout_ms);
            }
            drop(Object::take(connection));
        }
    }
    result
}

/// Asks the server to cancel what `connection` is running (a statement
/// waiting for the lease row, a long delete), so it stops holding or
/// waiting for locks now rather than at its `statement_timeout`. The request
/// goes on a connection of its own, in the background and bounded; a
/// statement it arrives too late for has already applied, which the
/// caller's ambiguous error allows for.
fn cancel(connection: &Object, timeout_ms: u64) {
    let token = connection.cancel_token();
    tokio::spawn(async move {
        let bound = Duration::from_millis(timeout_ms);
        let _ = tokio::time::timeout(bound, token.cancel_query(tokio_postgres::NoTls)).await;
    });
}

/// A pooled connection; failing to get one means nothing was sent.
async fn client(pool: &Pool, op: &str) -> Result<Object, CallError> {
    pool.get().await.map_err(|e| {
        CallError::rejected(format!("{op}: no database connection: {}", with_causes(&e)))
    })
}

/// An error the server raised aborted the statement (nothing applied); any
/// other error lost the connection, and the statement may have committed.
/// A failed statement as the worker reports it. The server's own words and
/// SQLSTATE come first (`delete: 57014 canceling statement due to
/// statement timeout`): tokio-postgres's display of a server error is only
/// "db error", which tells an operator nothing.
fn db_error(op: &str, error: tokio_postgres::Error) -> CallError {
    match error.as_db_error() {
        Some(server) => CallError::rejected(format!(
            "{op}: {} {}",
            server.code().code(),
            server.message()
        )),
        None => {
            let cause = std::error::Error::source(&error)
                .map(|cause| format!(": {cause}"))
                .unwrap_or_default();
            CallError::ambiguous(format!("{op}: {error}{cause}"))
        }
    }
}

/// Tokens and limits are unsigned in the worker and `bigint` in the schema.
fn to_sql_i64(value: u64, what: &str) -> Result<i64, CallError> {
    i64::try_from(value).map_err(|_| CallError::protocol(format!("{what} {value} exceeds bigint")))
}

fn from_sql_u64(value: i64, what: &str) -> Result<u64, CallError> {
    u64::try_from(value)
        .map_err(|_| CallError::protocol(format!("{what} {value} from the database is negative")))
}
