//! The real-mode database's clock, made steppable (a failover to a host
//! whose clock differs), and audits of every row deleted and every lease
//! change, kept by the database itself: the test asks it directly what went
//! early, and what committed though no reply said so (`unheard.rs`).
//!
//! Every statement of the adapters reads time through `retention_now_us()`
//! (migration 0001); the test replaces it with the host's clock plus an
//! offset kept in a table. A step takes the tables' locks in EXCLUSIVE mode
//! first, so it lands between the transactions that touch the lease or the
//! rows, never inside one: no statement of the adapters reads one offset
//! and acts under the other, as no session lives through a real failover.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_worker::pg::Pool;

use super::log::{RealRecorder, wall_us};
use crate::model::{RunSpec, deleted_young};

/// What both audits keep of the change beside its own columns: the
/// database's clock and true time as it happened, its transaction and
/// session, and the transaction's first clock reading, both ways.
const STAMP_COLUMNS: &str = "
                 at_clock_us bigint NOT NULL,
                 at_true_us bigint NOT NULL,
                 txn bigint NOT NULL,
                 client text NOT NULL,
                 first_clock_us bigint,
                 first_true_us bigint";

/// The values of [`STAMP_COLUMNS`], read inside the changing statement.
const STAMP_VALUES: &str = "retention_now_us(),
                     floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint,
                     txid_current(), current_setting('application_name'),
                     real_mode_first_reading('now'), real_mode_first_reading('true')";

/// Installs the steppable clock and the audits (after migrating).
pub async fn install(pool: &Pool) {
    let sql = format!(
            "CREATE TABLE real_mode_clock (offset_us bigint NOT NULL);
             INSERT INTO real_mode_clock VALUES (0);
             -- A transaction's first reading is kept for it: the fence's, in
             -- a delete, and the statement's own, in a lease change, which
             -- the audits below record for a change whose reply was lost.
             CREATE OR REPLACE FUNCTION retention_now_us() RETURNS bigint
                 LANGUAGE plpgsql VOLATILE AS $$
                 DECLARE
                     true_us bigint := floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
                     now_us bigint := true_us + (SELECT offset_us FROM real_mode_clock);
                 BEGIN
                     IF coalesce(current_setting('real_mode.first_now_us', true), '') = '' THEN
                         PERFORM set_config('real_mode.first_now_us', now_us::text, true);
                         PERFORM set_config('real_mode.first_true_us', true_us::text, true);
                     END IF;
                     RETURN now_us;
                 END $$;
             CREATE FUNCTION real_mode_first_reading(which text) RETURNS bigint
                 LANGUAGE sql VOLATILE AS $$
                 SELECT nullif(current_setting('real_mode.first_' || which || '_us', true), '')::bigint $$;
             CREATE TABLE real_mode_deleted (
                 id bigint NOT NULL,
                 created_at_ms bigint NOT NULL,{STAMP_COLUMNS});
             CREATE FUNCTION real_mode_audit() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 INSERT INTO real_mode_deleted VALUES (OLD.id, OLD.created_at_ms,
                     {STAMP_VALUES});
                 RETURN OLD;
             END $$;
             CREATE TRIGGER real_mode_audit AFTER DELETE ON retention_records
                 FOR EACH ROW EXECUTE FUNCTION real_mode_audit();
             CREATE TABLE real_mode_lease_changes (
                 owner text,
                 token bigint NOT NULL,
                 expires_at_ms bigint NOT NULL,{STAMP_COLUMNS});
             CREATE FUNCTION real_mode_lease_audit() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 INSERT INTO real_mode_lease_changes VALUES (NEW.owner, NEW.token,
                     NEW.expires_at_ms, {STAMP_VALUES});
                 RETURN NULL;
             END $$;
             CREATE TRIGGER real_mode_lease_audit AFTER INSERT OR UPDATE ON retention_lease
                 FOR EACH ROW EXECUTE FUNCTION real_mode_lease_audit();"
    );
    pool.get()
        .await
        .expect("a connection")
        .batch_execute(&sql)
        .await
        .expect("install the steppable clock and the audits");
}

/// Steps the database's clock by `delta_ms` and records it in `log`.
/// Retries while workers' transactions hold the tables (each attempt waits
/// at most 200 ms, so the workers queue behind it no longer than that).
pub async fn step(pool: &Pool, log: &RealRecorder, delta_ms: i64) {
    loop {
        let mut client = pool.get().await.expect("a connection");
        let tx = client.transaction().await.expect("BEGIN");
        let locked = tx
            .batch_execute(
                "SET LOCAL lock_timeout = '200ms';
                 LOCK TABLE retention_lease, retention_records IN EXCLUSIVE MODE",
            )
            .await;
        if locked.is_err() {
            drop(tx);
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        tx.execute(
            "UPDATE real_mode_clock SET offset_us = offset_us + $1",
            &[&(delta_ms * 1_000)],
        )
        .await
        .expect("step the clock");
        // No reading of either offset happens while the locks are held:
        // any whole millisecond in here is the step's instant.
        tokio::time::sleep(Duration::from_millis(2)).await;
        log.db_clock_stepped(wall_us() / 1_000 * 1_000, delta_ms);
        tx.commit().await.expect("COMMIT the step");
        return;
    }
}

/// What the audit saw: rows deleted younger than `retention_ms` by the
/// database's own clock as each went, and younger by true time (from the
/// true instant each row was written, `written_true_ms`).
pub struct Audit {
    /// Rows deleted.
    pub deleted: u64,
    /// Rows deleted younger than the retention by the database's clock.
    pub early_by_database_clock: u64,
    /// Rows deleted younger than the retention by true time.
    pub early_by_true_time: u64,
}

/// Reads the audit. `written_true_ms` gives a row's true write instant
/// (ms since the Unix epoch) from its id and `created_at_ms`.
pub async fn audit(
    pool: &Pool,
    retention_ms: u64,
    written_true_ms: impl Fn(i64, i64) -> i64,
) -> Audit {
    let retention = i64::try_from(retention_ms).expect("fits");
    let rows = pool
        .get()
        .await
        .expect("a connection")
        .query(
            "SELECT id, created_at_ms, at_clock_us, at_true_us FROM real_mode_deleted",
            &[],
        )
        .await
        .expect("read the audit");
    let mut audit = Audit {
        deleted: 0,
        early_by_database_clock: 0,
        early_by_true_time: 0,
    };
    for row in rows {
        let (id, created_at_ms): (i64, i64) = (row.get(0), row.get(1));
        let (clock_us, true_us): (i64, i64) = (row.get(2), row.get(3));
        audit.deleted += 1;
        let (clock_ms, true_ms) = (clock_us.div_euclid(1_000), true_us.div_euclid(1_000));
        let by_clock = deleted_young(created_at_ms, clock_ms, retention);
        audit.early_by_database_clock += u64::from(by_clock);
        let by_true_time = deleted_young(written_true_ms(id, created_at_ms), true_ms, retention);
        audit.early_by_true_time += u64::from(by_true_time);
    }
    audit
}

/// What the delete trigger's log line starts with.
pub const DELETE_LOG_TAG: &str = "real-mode delete:";

/// How many delete work times a run's plan table holds; statements past
/// it draw from PostgreSQL's `random()` instead.
const WORK_PLAN_LEN: usize = 4_096;

/// Makes every `DELETE` of the records spend a time in `db_batch_ms`
/// inside the statement, with its rows locked (triggers that sleep before
/// the first row goes), as the simulator's database does: the fence's lock
/// is held meanwhile, and `statement_timeout` counts it. The times are the
/// simulator's own draws for the plan, taken in the order statements reach
/// the server (a sequence, which a rolled-back statement also advances, as
/// the simulator draws when a statement arrives). Before it works, the
/// trigger logs how many rows the statement locked and its transaction
/// (`server_log.rs` reads it back).
pub async fn set_delete_work(pool: &Pool, spec: &RunSpec) {
    let (min_ms, max_ms) = (spec.db_batch_ms_min, spec.db_batch_ms_max);
    let mut draws = ChaCha8Rng::seed_from_u64(spec.db_work_seed());
    let plan: Vec<i64> = (0..WORK_PLAN_LEN)
        .map(|_| i64::try_from(draws.gen_range(min_ms..=max_ms)).unwrap_or(i64::MAX))
        .collect();
    let sql = format!(
        "CREATE TABLE real_mode_work_plan (n bigint PRIMARY KEY, ms bigint NOT NULL);
         CREATE SEQUENCE real_mode_work_seq;
         -- Each statement draws its work time as it starts (nextval once:
         -- in a WHERE it would advance for every row), kept for the
         -- transaction until spent.
         CREATE FUNCTION real_mode_plan_work() RETURNS trigger LANGUAGE plpgsql AS $$
         DECLARE
             turn bigint := nextval('real_mode_work_seq');
             planned bigint;
         BEGIN
             SELECT ms INTO planned FROM real_mode_work_plan WHERE n = turn;
             PERFORM set_config('real_mode.work_ms', coalesce(planned,
                 {min_ms} + floor(random() * ({max_ms} - {min_ms} + 1)))::text, true);
             RETURN NULL;
         END $$;
         -- Spent before the first row goes, once the statement's subquery
         -- has locked all its rows (logged, with the transaction), so that
         -- the rows stay locked while it works and each row's clock reading
         -- comes after the work, as in the simulator; or at the end, for a
         -- statement that deleted nothing.
         CREATE FUNCTION real_mode_work() RETURNS trigger LANGUAGE plpgsql AS $$
         DECLARE
             work_ms text := current_setting('real_mode.work_ms', true);
         BEGIN
             IF coalesce(work_ms, '') <> '' THEN
                 PERFORM set_config('real_mode.work_ms', '', true);
                 IF TG_LEVEL = 'ROW' THEN
                     RAISE LOG '{DELETE_LOG_TAG} % rows in transaction %',
                         (SELECT count(*) FROM retention_records
                          WHERE xmax::text = (txid_current() % 4294967296)::text),
                         txid_current();
                 END IF;
                 PERFORM pg_sleep(work_ms::bigint / 1000.0);
             END IF;
             IF TG_LEVEL = 'ROW' THEN
                 RETURN OLD;
             END IF;
             RETURN NULL;
         END $$;
         CREATE TRIGGER real_mode_plan_work BEFORE DELETE ON retention_records
             FOR EACH STATEMENT EXECUTE FUNCTION real_mode_plan_work();
         CREATE TRIGGER real_mode_work BEFORE DELETE ON retention_records
             FOR EACH ROW EXECUTE FUNCTION real_mode_work();
         CREATE TRIGGER real_mode_work_done AFTER DELETE ON retention_records
             FOR EACH STATEMENT EXECUTE FUNCTION real_mode_work();"
    );
    let client = pool.get().await.expect("a connection");
    client
        .batch_execute(&sql)
        .await
        .expect("install the delete's work time");
    client
        .execute(
            "INSERT INTO real_mode_work_plan (n, ms)
             SELECT ordinality, ms FROM unnest($1::bigint[]) WITH ORDINALITY AS plan(ms, ordinality)",
            &[&plan],
        )
        .await
        .expect("write the delete work plan");
}
