//! The lease service on PostgreSQL: one row per lease name, tokens bumped on
//! every grant, expiry by the database's clock, compare-and-set release.

use deadpool_postgres::Object;

use super::{Applied, PgOptions, Pool, bounded, db_error, from_sql_u64, to_sql_i64};
use crate::{CallError, Lease, LeaseService};

// The statements are public so that the concurrent differential test
// (`sim/tests/real/concurrent.rs`) runs the very SQL the adapter runs.

/// Grants iff the row is absent, released, or expired. `clock` is evaluated
/// once, before any wait for the row lock: expiry is judged at that instant,
/// and a lease renewed meanwhile fails the re-checked `WHERE`. The applied-at
/// time is read in `RETURNING`, after the lock, so it orders this grant after
/// whatever it waited for.
pub const ACQUIRE: &str = "
    WITH clock AS (SELECT retention_now_us() AS now_us)
    INSERT INTO retention_lease AS l (name, owner, token, expires_at_ms)
    SELECT $1, $2, 1, clock.now_us / 1000 + $3 FROM clock
    ON CONFLICT (name) DO UPDATE
        SET owner = EXCLUDED.owner,
            token = l.token + 1,
            expires_at_ms = EXCLUDED.expires_at_ms
        WHERE l.owner IS NULL
           OR l.expires_at_ms <= (SELECT now_us FROM clock) / 1000
    RETURNING l.owner, l.token, l.expires_at_ms, retention_now_us()";

/// Replaces exactly the current, unexpired lease with the next token.
pub const RENEW: &str = "
    WITH clock AS (SELECT retention_now_us() AS now_us)
    UPDATE retention_lease AS l
        SET token = l.token + 1,
            expires_at_ms = clock.now_us / 1000 + $5
        FROM clock
        WHERE l.name = $1 AND l.owner = $2 AND l.token = $3
          AND l.expires_at_ms = $4 AND l.expires_at_ms > clock.now_us / 1000
    RETURNING l.owner, l.token, l.expires_at_ms, retention_now_us()";

/// Clears the holder iff it is exactly the lease named (REL-2). The token
/// stays in the row so the next grant continues the sequence.
pub const RELEASE: &str = "
    UPDATE retention_lease
        SET owner = NULL
        WHERE name = $1 AND owner = $2 AND token = $3 AND expires_at_ms = $4
    RETURNING retention_now_us()";

/// The lease service of `worker/CONTRACT.md` on a `retention_lease` row.
#[derive(Debug, Clone)]
pub struct PgLeaseService {
    pool: Pool,
    options: PgOptions,
}

impl PgLeaseService {
    /// A lease service over `pool`'s database, which [`super::migrate`] has
    /// prepared.
    pub fn new(pool: Pool, options: PgOptions) -> Self {
        Self { pool, options }
    }

    /// `acquire`, with the database's time of the grant.
    pub async fn acquire_applied(
        &self,
        owner_id: &str,
    ) -> Result<Option<Applied<Lease>>, CallError> {
        let ttl_ms = to_sql_i64(self.options.lease_ttl_ms, "lease TTL")?;
        let name = self.options.lease_name.as_str();
        bounded(&self.pool, &self.options, "acquire", async |client| {
            let params: Params<'_, 3> = [&name, &owner_id, &ttl_ms];
            let rows = query_prepared(client, ACQUIRE, "acquire", &params).await?;
            granted(rows, "acquire")
        })
        .await
    }

    /// `renew`, with the database's time of the grant.
    pub async fn renew_applied(&self, lease: &Lease) -> Result<Option<Applied<Lease>>, CallError> {
        let ttl_ms = to_sql_i64(self.options.lease_ttl_ms, "lease TTL")?;
        let token = to_sql_i64(lease.fencing_token, "token")?;
        let name = self.options.lease_name.as_str();
        bounded(&self.pool, &self.options, "renew", async |client| {
            let params: Params<'_, 5> = [
                &name,
                &lease.owner_id,
                &token,
                &lease.expires_at_ms,
                &ttl_ms,
            ];
            let rows = query_prepared(client, RENEW, "renew", &params).await?;
            granted(rows, "renew")
        })
        .await
    }

    /// `release`; `Some(at)` when it cleared the holder, `None` when `lease`
    /// was no longer current and nothing changed.
    pub async fn release_applied(&self, lease: &Lease) -> Result<Option<i64>, CallError> {
        let token = to_sql_i64(lease.fencing_token, "token")?;
        let name = self.options.lease_name.as_str();
        bounded(&self.pool, &self.options, "release", async |client| {
            let params: Params<'_, 4> = [&name, &lease.owner_id, &token, &lease.expires_at_ms];
            let rows = query_prepared(client, RELEASE, "release", &params).await?;
            Ok(rows.first().map(|row| row.get::<_, i64>(0)))
        })
        .await
    }

    /// The row as stored: holder (if any), last token and expiry; `None`
    /// before the first grant. For operators and tests; takes no lock.
    pub async fn inspect(&self) -> Result<Option<(Option<String>, u64, i64)>, CallError> {
        let name = self.options.lease_name.as_str();
        bounded(&self.pool, &self.options, "inspect", async |client| {
            let row = client
                .query_opt(
                    "SELECT owner, token, expires_at_ms FROM retention_lease WHERE name = $1",
                    &[&name],
                )
                .await
                .map_err(|e| db_error("inspect", e))?;
            row.map(|row| Ok((row.get(0), from_sql_u64(row.get(1), "token")?, row.get(2))))
                .transpose()
        })
        .await
    }
}

/// A statement's parameters.
type Params<'a, const N: usize> = [&'a (dyn tokio_postgres::types::ToSql + Sync); N];

/// Runs `sql` with `params`, prepared once per connection: a lease call is
/// then one round trip.
async fn query_prepared(
    client: &Object,
    sql: &str,
    op: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<tokio_postgres::Row>, CallError> {
    let statement = client
        .prepare_cached(sql)
        .await
        .map_err(|e| db_error(op, e))?;
    client
        .query(&statement, params)
        .await
        .map_err(|e| db_error(op, e))
}

fn granted(rows: Vec<tokio_postgres::Row>, op: &str) -> Result<Option<Applied<Lease>>, CallError> {
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let owner_id: Option<String> = row.get(0);
    let owner_id = owner_id
        .ok_or_else(|| CallError::protocol(format!("{op}: granted a lease with no owner")))?;
    Ok(Some(Applied {
        value: Lease {
            owner_id,
            fencing_token: from_sql_u64(row.get(1), "token")?,
            expires_at_ms: row.get(2),
        },
        at_us: row.get(3),
    }))
}

impl LeaseService for PgLeaseService {
    async fn acquire(&self, owner_id: &str) -> Result<Option<Lease>, CallError> {
        Ok(self
            .acquire_applied(owner_id)
            .await?
            .map(|applied| applied.value))
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, CallError> {
        Ok(self
            .renew_applied(lease)
            .await?
            .map(|applied| applied.value))
    }

    async fn release(&self, lease: &Lease) -> Result<(), CallError> {
        self.release_applied(lease).await.map(|_| ())
    }
}
