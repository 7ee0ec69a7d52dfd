//! The records repository on PostgreSQL: a delete that the lease's fencing
//! token guards in the same transaction (FEN-2).

use super::{Applied, PgOptions, Pool, bounded, db_error, from_sql_u64, to_sql_i64};
use crate::FenceRejection;
use crate::{CallError, RecordsRepository};

// Why a lock and not `DELETE ... WHERE EXISTS (SELECT 1 FROM retention_lease
// WHERE token = $t AND unexpired)`: under READ COMMITTED that EXISTS reads a
// snapshot and takes no lock. A renewal or a successor's acquire can commit a
// new token between the snapshot and our commit without conflicting with us,
// so rows would go under a token that is already stale, which is exactly what
// fencing must prevent. `FOR SHARE` on the lease row conflicts with the
// `UPDATE` every grant and release makes: while this transaction holds it no
// new token can be committed, and if a grant is already in progress we wait
// for it and the check is re-evaluated against the new row (and fails). Fence
// check and delete are therefore one step with respect to the lease.

/// Locks the lease row iff `token` is its current, unexpired token; returns
/// the database's time of the check. `clock` is evaluated once, so the time
/// returned is the time judged.
pub const FENCE: &str = "
    WITH clock AS (SELECT retention_now_us() AS now_us)
    SELECT clock.now_us
    FROM retention_lease AS l, clock
    WHERE l.name = $1 AND l.owner IS NOT NULL AND l.token = $2
      AND l.expires_at_ms > clock.now_us / 1000
    FOR SHARE OF l";

/// Why the fence failed, read after the fact (rejections only).
const FENCE_STATE: &str = "
    SELECT owner IS NOT NULL, token, expires_at_ms, retention_now_us() / 1000
    FROM retention_lease WHERE name = $1";

/// The batch delete the fence guards: at most `$2` rows older than `$1`,
/// and (unless `$3` is 0) older than `$3` ms by the database's own clock,
/// read once for the statement (an uncorrelated subquery), oldest first,
/// by primary key. The second bound is what keeps DATA-4 when the
/// database's clock steps back after the term's cutoff was fixed (a
/// failover to a host whose clock is behind): each batch is judged by the
/// clock the database reads when it runs. `LEAST` keeps the one bound the
/// index on `created_at_ms` can use.
/// Returns `id, created_at_ms` and the
/// database's clock as each row went (the last is the latest instant before
/// `COMMIT` that the delete can report without another round trip). `SKIP
/// LOCKED` keeps a delete from queueing behind rows another transaction (a
/// manual cleanup, an application write) holds. Public so that a benchmark
/// can run the very same statement without the fence.
pub const DELETE_OLDEST: &str = "
    DELETE FROM retention_records
    WHERE id IN (
        SELECT id FROM retention_records
        WHERE created_at_ms < LEAST($1, CASE WHEN $3::bigint = 0 THEN $1
            ELSE (SELECT retention_now_us()) / 1000 - $3::bigint END)
        ORDER BY created_at_ms, id
        LIMIT $2
        FOR UPDATE SKIP LOCKED)
    RETURNING id, created_at_ms, retention_now_us()";

/// What a fenced delete committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedDelete {
    /// The rows removed, oldest first.
    pub rows: Vec<DeletedRow>,
    /// The database's clock when the `DELETE` statement removed its last
    /// row (the fence's instant when it removed none): after it, only the
    /// `COMMIT`. While the fence's share lock is held no grant or release
    /// of the lease row can commit, so every lease change the delete
    /// waited out is later than this.
    pub deleted_at_us: i64,
}

/// A row the fenced delete removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DeletedRow {
    /// When it was written; the ordering key.
    pub created_at_ms: i64,
    /// Its primary key.
    pub id: u64,
}

/// The records repository of `worker/CONTRACT.md` on `retention_records`,
/// fenced by the `retention_lease` row of the same database.
#[derive(Debug, Clone)]
pub struct PgRecords {
    pool: Pool,
    options: PgOptions,
}

impl PgRecords {
    /// A repository over `pool`'s database, which [`super::migrate`] has
    /// prepared. `options.lease_name` names the lease that fences it.
    pub fn new(pool: Pool, options: PgOptions) -> Self {
        Self { pool, options }
    }

    /// The fenced delete, returning the rows removed (oldest first) with
    /// the database's time of the delete, and the time of the fence check.
    pub async fn delete_applied(
        &self,
        older_than_ms: i64,
        limit: u32,
        fencing_token: u64,
    ) -> Result<Applied<FencedDelete>, CallError> {
        let token = to_sql_i64(fencing_token, "token")?;
        let limit = i64::from(limit);
        let retention_ms = to_sql_i64(self.options.retention_ms, "retention")?;
        let name = self.options.lease_name.as_str();
        bounded(&self.pool, &self.options, "delete", async |client| {
            let tx = client
                .transaction()
                .await
                .map_err(|e| db_error("delete: begin", e))?;
            let statement = tx
                .prepare_cached(FENCE)
                .await
                .map_err(|e| db_error("delete: prepare", e))?;
            let fence = tx
                .query_opt(&statement, &[&name, &token])
                .await
                .map_err(|e| db_error("delete: fence", e))?;
            let Some(fence) = fence else {
                let state = tx
                    .query_opt(FENCE_STATE, &[&name])
                    .await
                    .map_err(|e| db_error("delete: fence state", e))?;
                // Dropping `tx` rolls back; nothing was deleted.
                let why = rejection(state, fencing_token)?;
                return Err(CallError::fenced(format!("token {fencing_token}: {why}")));
            };
            let at_us: i64 = fence.get(0);
            let statement = tx
                .prepare_cached(DELETE_OLDEST)
                .await
                .map_err(|e| db_error("delete: prepare", e))?;
            let deleted = tx
                .query(&statement, &[&older_than_ms, &limit, &retention_ms])
                .await
                .map_err(|e| db_error("delete", e))?;
            tx.commit()
                .await
                .map_err(|e| db_error("delete: commit", e))?;
            let mut rows = deleted
                .iter()
                .map(|row| {
                    Ok(DeletedRow {
                        id: from_sql_u64(row.get(0), "row id")?,
                        created_at_ms: row.get(1),
                    })
                })
                .collect::<Result<Vec<_>, CallError>>()?;
            rows.sort_unstable();
            let deleted_at_us = deleted.iter().map(|row| row.get::<_, i64>(2)).max();
            let value = FencedDelete {
                rows,
                deleted_at_us: deleted_at_us.unwrap_or(at_us),
            };
            Ok(Applied { value, at_us })
        })
        .await
    }
}

/// The model's reason for the refusal, from the row as it is now. A token
/// only ever loses its standing, so the row read after the failed check
/// still explains it.
fn rejection(
    state: Option<tokio_postgres::Row>,
    fencing_token: u64,
) -> Result<FenceRejection, CallError> {
    let Some(row) = state else {
        return Ok(FenceRejection::NoHolder);
    };
    let held: bool = row.get(0);
    let current_token = from_sql_u64(row.get(1), "token")?;
    let expires_at_ms: i64 = row.get(2);
    Ok(if !held {
        FenceRejection::NoHolder
    } else if current_token != fencing_token {
        FenceRejection::StaleToken { current_token }
    } else {
        FenceRejection::Expired { expires_at_ms }
    })
}

impl RecordsRepository for PgRecords {
    async fn delete_batch(&self, cutoff_ms: i64, limit: u32, token: u64) -> Result<u64, CallError> {
        let applied = self.delete_applied(cutoff_ms, limit, token).await?;
        Ok(applied.value.rows.len() as u64)
    }
}
