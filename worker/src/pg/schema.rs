//! The shipped schema: numbered migrations, applied once each, in order.

use super::{Pool, SetupError, with_causes};

/// Every migration, in order: (version, name, SQL). The files live in
/// `worker/migrations/` so operators can also apply them with `psql -f`.
pub const MIGRATIONS: &[(i32, &str, &str)] = &[(
    1,
    "lease_and_records",
    include_str!("../../migrations/0001_lease_and_records.sql"),
)];

/// Any number of replicas may start at once; the first to take this
/// advisory lock migrates, the others wait and then find nothing to do.
const MIGRATION_LOCK_KEY: i64 = 0x7265_7465_6e74_696f; // "retentio"

/// Applies the migrations the database lacks, in one transaction, and
/// returns the versions applied (empty when it was up to date).
pub async fn migrate(pool: &Pool) -> Result<Vec<i32>, SetupError> {
    let fail = |step: &str| {
        let step = step.to_owned();
        move |e: tokio_postgres::Error| SetupError(format!("migrate: {step}: {}", with_causes(&e)))
    };
    let mut client = pool.get().await.map_err(|e| {
        SetupError(format!(
            "migrate: no database connection: {}",
            with_causes(&e)
        ))
    })?;
    let tx = client.transaction().await.map_err(fail("begin"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY])
        .await
        .map_err(fail("lock"))?;
    // "already exists, skipping" notices are not news to an operator.
    tx.batch_execute(
        "SET LOCAL client_min_messages = warning;
         CREATE TABLE IF NOT EXISTS retention_schema_migrations (
             version    integer     PRIMARY KEY,
             name       text        NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await
    .map_err(fail("create the migrations table"))?;
    let done: Vec<i32> = tx
        .query("SELECT version FROM retention_schema_migrations", &[])
        .await
        .map_err(fail("read applied versions"))?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let mut applied = Vec::new();
    for (version, name, sql) in MIGRATIONS {
        if done.contains(version) {
            continue;
        }
        let step = format!("{version:04}_{name}");
        tx.batch_execute(sql).await.map_err(fail(&step))?;
        tx.execute(
            "INSERT INTO retention_schema_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )
        .await
        .map_err(fail(&step))?;
        applied.push(*version);
    }
    tx.commit().await.map_err(fail("commit"))?;
    Ok(applied)
}
