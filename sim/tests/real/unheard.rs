//! Effects that committed though the adapter reported its call ambiguous
//! (`retention_sim::real::record_unheard`), made to happen on a real
//! server: a `COMMIT` that outlasts the adapter's timer.

use std::time::Duration;

use crate::on_database;
use retention_sim::model::{Actor, EventKind, Invocation, LeaseRec};
use retention_sim::real::db_clock::install;
use retention_sim::real::log::{RealRecorder, wall_us};
use retention_sim::real::record_unheard;
use retention_worker::pg::{PgLeaseService, PgOptions, PgRecords, Pool};
use retention_worker::{CallErrorKind, LeaseService, RecordsRepository};

/// Makes replica 1's commits take 3 s, on past the cancel its adapter
/// sends when its 1 s timer fires (the deferred trigger traps it):
/// the change commits, and the call's answer is "ambiguous".
const SLOW_COMMITS: &str = "
    CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        until timestamptz := clock_timestamp() + interval '3 s';
    BEGIN
        IF current_setting('application_name') = 'r1'
           AND coalesce(current_setting('test.slowed', true), '') = '' THEN
            PERFORM set_config('test.slowed', 'yes', true);
            WHILE clock_timestamp() < until LOOP
                BEGIN
                    PERFORM pg_sleep(0.05);
                EXCEPTION WHEN query_canceled THEN
                    RAISE LOG 'slow_commit: a cancel trapped';
                END;
            END LOOP;
        END IF;
        RETURN NULL;
    END $$;
    CREATE CONSTRAINT TRIGGER slow_delete AFTER DELETE ON retention_records
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();
    CREATE CONSTRAINT TRIGGER slow_grant AFTER INSERT OR UPDATE ON retention_lease
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();";

/// Tries of each call before the test gives up on its timer firing
/// during the `COMMIT`.
const ATTEMPTS: u32 = 3;

/// Waits until replica 1's sessions have ended what they were running
/// (its commits land), at most 30 s.
async fn settled(pool: &Pool) {
    let client = pool.get().await.unwrap();
    for _ in 0..1_500 {
        let busy: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE application_name = 'r1' AND state IS DISTINCT FROM 'idle'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if busy == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("replica 1's sessions still busy after 30 s");
}

/// An acquire and a delete whose replies never came (the adapter gave up
/// while their `COMMIT` ran) are in the history as the grant and the
/// delete they were, tied to their calls; heard once, never twice.
#[test]
fn effects_committed_after_the_adapter_gave_up_are_recorded_from_the_audits() {
    on_database("unheard", 2, async |server, harness| {
        install(&harness).await;
        harness
            .get()
            .await
            .unwrap()
            .batch_execute(SLOW_COMMITS)
            .await
            .unwrap();
        let options = PgOptions {
            call_timeout_ms: 1_000,
            lease_ttl_ms: 60_000,
            statement_timeout_ms: 0,
            lock_timeout_ms: 0,
            idle_in_transaction_timeout_ms: 0,
            ..PgOptions::default()
        };
        let replica = server.pool_via(server.port(), "unheard", "r1", 2, &options);
        let invoke = |log: &RealRecorder, call: u64, invocation: Invocation| {
            log.record(Actor::Replica(1), 1, EventKind::Invoke { call, invocation });
        };
        let client = harness.get().await.unwrap();

        // The adapter's 1 s timer must fire while the COMMIT runs. On a
        // loaded machine it can fire before: its cancel then ends the
        // statement, nothing commits, and that attempt is not the case
        // under test, so it is made again (with a recorder of its own).
        let mut granted = None;
        for attempt in 1..=ATTEMPTS {
            let log = RealRecorder::new();
            invoke(&log, 1, Invocation::Acquire);
            let acquired = PgLeaseService::new(replica.clone(), options.clone())
                .acquire("r1")
                .await;
            let error = acquired.expect_err("the acquire's answer came before its commit ended");
            assert_eq!(error.kind, CallErrorKind::Ambiguous, "{error}");
            settled(&harness).await;
            let lease = client
                .query_opt(
                    "SELECT owner, token, expires_at_ms FROM retention_lease",
                    &[],
                )
                .await
                .unwrap();
            if let Some(lease) = lease {
                granted = Some((log, lease));
                break;
            }
            eprintln!("attempt {attempt}: the acquire's cancel came before its COMMIT; again");
        }
        let (log, lease) = granted.expect("an acquire committed after its adapter gave up");
        let (owner, token, expires_at_ms): (String, i64, i64) =
            (lease.get(0), lease.get(1), lease.get(2));
        assert_eq!(owner, "r1", "the grant committed");
        let token = u64::try_from(token).unwrap();

        let aged_ms = wall_us() / 1_000 - 60_000;
        let ids: Vec<i64> = client
            .query(
                "INSERT INTO retention_records (created_at_ms)
                 SELECT $1::bigint + g FROM generate_series(1, 3) g RETURNING id",
                &[&aged_ms],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let older_than_ms = wall_us() / 1_000;
        let mut delete_call = None;
        for attempt in 1..=ATTEMPTS {
            let call = 1 + u64::from(attempt);
            invoke(
                &log,
                call,
                Invocation::Delete {
                    older_than_ms: older_than_ms - log.epoch_ms,
                    limit: 10,
                    token,
                },
            );
            let deleted = PgRecords::new(replica.clone(), options.clone())
                .delete_batch(older_than_ms, 10, token)
                .await;
            let error = deleted.expect_err("the delete's answer came before its commit ended");
            assert_eq!(error.kind, CallErrorKind::Ambiguous, "{error}");
            settled(&harness).await;
            let left: i64 = client
                .query_one("SELECT count(*) FROM retention_records", &[])
                .await
                .unwrap()
                .get(0);
            if left == 0 {
                delete_call = Some(call);
                break;
            }
            assert_eq!(left, 3, "a delete commits all its rows or none");
            eprintln!("attempt {attempt}: the delete's cancel came before its COMMIT; again");
        }
        let delete_call = delete_call.expect("a delete committed after its adapter gave up");

        assert_eq!(record_unheard(&harness, &log).await, 2);
        let effects: Vec<(Actor, EventKind)> = log
            .events()
            .into_iter()
            .filter(|e| !matches!(e.kind, EventKind::Invoke { .. }))
            .map(|e| (e.actor, e.kind))
            .collect();
        let [(grant_actor, grant), (delete_actor, delete)] = &effects[..] else {
            panic!("a grant and a delete, found {effects:#?}");
        };
        assert_eq!(*grant_actor, Actor::Lease);
        let expected_lease = LeaseRec {
            owner: "r1".into(),
            token,
            expires_at_ms: expires_at_ms - log.epoch_ms,
        };
        assert_eq!(
            *grant,
            EventKind::Granted {
                call: 1,
                lease: expected_lease
            }
        );
        assert_eq!(*delete_actor, Actor::Db);
        let token_sent = token;
        let EventKind::Deleted {
            call,
            token,
            older_than_ms: sent_cutoff_ms,
            rows,
            fenced_clock_ms,
            deleted_clock_ms,
            fenced_at_ms,
        } = delete
        else {
            panic!("a delete, found {delete:?}");
        };
        assert_eq!((*call, *token), (delete_call, token_sent));
        assert_eq!(*sent_cutoff_ms, older_than_ms - log.epoch_ms);
        let row_ids: Vec<i64> = rows.iter().map(|row| row.id as i64).collect();
        assert_eq!(row_ids, ids, "the rows, oldest first");
        let (fenced_clock_ms, deleted_clock_ms) =
            (fenced_clock_ms.unwrap(), deleted_clock_ms.unwrap());
        assert!(
            *fenced_at_ms == fenced_clock_ms && fenced_clock_ms <= deleted_clock_ms,
            "the fence reads the clock (unstepped here) before the rows go: \
             {fenced_at_ms} {fenced_clock_ms} {deleted_clock_ms}"
        );

        assert_eq!(
            record_unheard(&harness, &log).await,
            0,
            "recorded effects are heard"
        );
    });
}
