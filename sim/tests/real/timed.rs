//! Timed differential: named interleavings of the adapters' SQL run on real
//! time against PostgreSQL, with the server-side bounds set on every
//! session as the adapters set them and the shipped clock function, and
//! against the model (`retention_sim::db`) on the same schedule. Each
//! statement's outcome must agree, and so must when it ended, within
//! `TOLERANCE_MS`. Each rule of PostgreSQL's timing the model keeps has an
//! interleaving here that fails if the model reverts it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use retention_sim::db::{Answer, Bounds, LeaseAnswer, LeaseStatement, Refusal};
use retention_worker::pg::{ACQUIRE, DELETE_OLDEST, FENCE, RENEW};
use tokio_postgres::{Client, NoTls};

use crate::commit_wait::name_the_standby;
use crate::db_driver::Driver;
use crate::runtime;
use test_support::TempServer;

/// Scheduling, round trips and the server's own latency, at most.
const TOLERANCE_MS: i64 = 150;
const TTL_MS: i64 = 60_000;

#[derive(Debug, Clone, Copy)]
enum Action {
    Acquire,
    Renew,
    Begin,
    Fence,
    /// A statement of the transaction that works this long.
    Work(u64),
    /// `DELETE_OLDEST` of one row with no fence first: a write that no
    /// lease lock stands behind.
    DeleteOne,
    Commit,
    /// `pg_cancel_backend` of the connection's statement (sent by a third
    /// party; the model's cancel request).
    Cancel,
}

/// At `at_ms`, connection `conn` does `action`.
type Step = (i64, usize, Action);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    Refused,
    LockTimeout,
    StatementTimeout,
    Cancelled,
}

struct Story {
    name: &'static str,
    bounds: Bounds,
    standby_stalled: bool,
    steps: Vec<Step>,
}

fn stories() -> Vec<Story> {
    use Action::*;
    let locks = Bounds {
        lock_ms: 1_000,
        ..Bounds::default()
    };
    vec![
        Story {
            name: "lock_timeout is armed afresh for each holder waited for",
            bounds: locks,
            standby_stalled: false,
            steps: vec![
                (0, 0, Begin),
                (100, 0, Fence),
                (0, 1, Begin),
                (500, 1, Fence),
                (150, 2, Renew),
                (900, 0, Commit),
                (1_800, 1, Commit),
            ],
        },
        Story {
            name: "a waiter restarts its timer only when it reaches the head",
            bounds: locks,
            standby_stalled: false,
            steps: vec![
                (0, 0, Begin),
                (50, 0, Fence),
                (100, 1, Renew),
                (300, 2, Renew),
                (500, 3, Acquire),
                (2_500, 0, Commit),
            ],
        },
        Story {
            name: "a cut statement releases its transaction's locks at once",
            bounds: Bounds {
                statement_ms: 700,
                ..Bounds::default()
            },
            standby_stalled: false,
            steps: vec![
                (0, 0, Begin),
                (50, 0, Fence),
                (100, 0, Work(3_000)),
                (300, 1, Renew),
                // PostgreSQL answers COMMIT of the aborted transaction with
                // the tag ROLLBACK, no error.
                (1_000, 0, Commit),
            ],
        },
        Story {
            name: "a cancel ends a lock wait with nothing applied",
            bounds: locks,
            standby_stalled: false,
            steps: vec![
                (0, 0, Begin),
                (50, 0, Fence),
                (100, 1, Renew),
                (600, 1, Cancel),
                (700, 2, Renew),
                (900, 0, Commit),
            ],
        },
        // A commit waits for the standby only if its transaction wrote
        // (PostgreSQL assigns a transaction id at its first write or row
        // lock, and only a transaction with one has a commit record).
        Story {
            name: "a commit with nothing written ends at once though the standby is silent",
            bounds: locks,
            standby_stalled: true,
            steps: vec![(0, 0, Begin), (100, 0, Commit)],
        },
        Story {
            name: "a delete with no fence still waits for the standby at its commit",
            bounds: locks,
            standby_stalled: true,
            steps: vec![
                (0, 0, Begin),
                (100, 0, DeleteOne),
                (200, 0, Commit),
                (800, 0, Cancel),
            ],
        },
        Story {
            name: "a fence waits behind a grant held until its commit is durable",
            bounds: locks,
            standby_stalled: true,
            steps: vec![
                (0, 1, Begin),
                (100, 0, Renew),
                (300, 1, Fence),
                (800, 0, Cancel),
            ],
        },
    ]
}

/// The model's run of `story`: each statement's outcome and end.
fn model(story: &Story) -> Vec<(Outcome, i64)> {
    let mut db = Driver::new(TTL_MS as u64, &[1, 2, 3], story.bounds);
    db.advance(0);
    let first = db.lease(0, 99, LeaseStatement::Acquire { owner: "a".into() });
    assert!(db.answer(first).is_some(), "the first grant is at once");
    if story.standby_stalled {
        db.standby(0, false);
    }
    let mut txns = [None; 4];
    let mut ids = Vec::new();
    let mut steps = story.steps.clone();
    steps.sort_by_key(|(at_ms, ..)| *at_ms);
    for (at_ms, conn, action) in steps {
        let session = conn as u64 + 1;
        let lease = db.db.lease().stored().cloned();
        let id = match action {
            Action::Acquire => db.lease(
                at_ms,
                session,
                LeaseStatement::Acquire { owner: "b".into() },
            ),
            Action::Renew => {
                let lease = lease.expect("a lease to renew");
                db.lease(at_ms, session, LeaseStatement::Renew { lease })
            }
            Action::Begin => {
                let txn = db.begin(at_ms, session);
                txns[conn] = Some(txn);
                continue;
            }
            Action::Fence => db.fence(at_ms, session, txns[conn].expect("begun"), 1),
            Action::Work(ms) => db.delete(at_ms, session, txns[conn].expect("begun"), (0, 0, ms)),
            Action::DeleteOne => {
                db.delete(at_ms, session, txns[conn].expect("begun"), (i64::MAX, 1, 0))
            }
            Action::Commit => db.commit(at_ms, session, txns[conn].expect("begun")),
            Action::Cancel => {
                db.cancel(at_ms, session);
                continue;
            }
        };
        ids.push(id);
    }
    db.advance(10_000);
    ids.iter()
        .map(|id| {
            let (at_ms, answer) = db.answer(*id).expect("every statement ends").clone();
            let outcome = match answer {
                Ok(Answer::Lease(applied)) if applied.answer == LeaseAnswer::Refused => {
                    Outcome::Refused
                }
                Ok(Answer::Fence(Err(_))) => Outcome::Refused,
                Ok(_) => Outcome::Ok,
                Err(Refusal::Cut(why)) if why.starts_with("lock timeout") => Outcome::LockTimeout,
                Err(Refusal::Cut(why)) if why.starts_with("statement timeout") => {
                    Outcome::StatementTimeout
                }
                Err(Refusal::Cut(_)) => Outcome::Cancelled,
                Err(other) => panic!("{}: {other:?}", story.name),
            };
            (outcome, at_ms)
        })
        .collect()
}

async fn connect(url: &str, bounds: Bounds) -> (Arc<Client>, i32) {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "SET lock_timeout = {}; SET statement_timeout = {}; \
             SET idle_in_transaction_session_timeout = {}",
            bounds.lock_ms, bounds.statement_ms, bounds.idle_in_transaction_ms
        ))
        .await
        .expect("the adapters' bounds");
    let pid = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("pid")
        .get(0);
    (Arc::new(client), pid)
}

fn outcome_of(
    result: Result<Vec<tokio_postgres::Row>, tokio_postgres::Error>,
    action: Action,
) -> Outcome {
    match result {
        Ok(rows)
            if rows.is_empty()
                && matches!(action, Action::Acquire | Action::Renew | Action::Fence) =>
        {
            Outcome::Refused
        }
        Ok(_) => Outcome::Ok,
        Err(error) => {
            let message = error
                .as_db_error()
                .map(|e| e.message().to_owned())
                .unwrap_or_default();
            if message.contains("lock timeout") {
                Outcome::LockTimeout
            } else if message.contains("statement timeout") {
                Outcome::StatementTimeout
            } else {
                assert!(message.contains("user request"), "{error}");
                Outcome::Cancelled
            }
        }
    }
}

/// The server's run of `story` on real time.
async fn server(url: &str, admin: &Client, story: &Story) -> Vec<(Outcome, i64)> {
    admin
        .batch_execute(
            "TRUNCATE retention_lease; TRUNCATE retention_records RESTART IDENTITY;
             INSERT INTO retention_records (created_at_ms) VALUES (1), (2), (3)",
        )
        .await
        .expect("reset: the model's three rows");
    let grant = [
        &"retention" as &(dyn tokio_postgres::types::ToSql + Sync),
        &"a",
        &TTL_MS,
    ];
    admin.query(ACQUIRE, &grant).await.expect("the first grant");
    let standby = if story.standby_stalled { "nobody" } else { "" };
    name_the_standby(admin, standby).await;
    let mut connections = Vec::new();
    for _ in 0..4 {
        connections.push(connect(url, story.bounds).await);
    }
    let start = Instant::now() + Duration::from_millis(300);
    let mut tasks = Vec::new();
    // A cancel comes from a third party, while its target is busy.
    for &(at_ms, conn, action) in &story.steps {
        if let Action::Cancel = action {
            let (url, pid) = (url.to_owned(), connections[conn].1);
            tokio::spawn(async move {
                tokio::time::sleep_until((start + Duration::from_millis(at_ms as u64)).into())
                    .await;
                let (other, _) = connect(&url, Bounds::default()).await;
                other
                    .execute("SELECT pg_cancel_backend($1)", &[&pid])
                    .await
                    .expect("cancel");
            });
        }
    }
    for (conn, (client, _)) in connections.iter().cloned().enumerate() {
        let steps = story.steps.iter().copied();
        let steps: Vec<Step> = steps
            .filter(|s| s.1 == conn && !matches!(s.2, Action::Cancel))
            .collect();
        tasks.push(tokio::spawn(async move {
            let mut ended = Vec::new();
            for (at_ms, _, action) in steps {
                tokio::time::sleep_until((start + Duration::from_millis(at_ms as u64)).into())
                    .await;
                let result = match action {
                    Action::Begin => {
                        client.batch_execute("BEGIN").await.expect("begin");
                        continue;
                    }
                    Action::Cancel => unreachable!("sent on its own"),
                    Action::Acquire => {
                        let p = [
                            &"retention" as &(dyn tokio_postgres::types::ToSql + Sync),
                            &"b",
                            &TTL_MS,
                        ];
                        client.query(ACQUIRE, &p).await
                    }
                    Action::Renew => {
                        let row = client
                            .query_one(
                                "SELECT owner, token, expires_at_ms FROM retention_lease",
                                &[],
                            )
                            .await
                            .expect("the row");
                        let (owner, token, expires): (String, i64, i64) =
                            (row.get(0), row.get(1), row.get(2));
                        let p: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
                            [&"retention", &owner, &token, &expires, &TTL_MS];
                        client.query(RENEW, &p).await
                    }
                    Action::Fence => {
                        let p: [&(dyn tokio_postgres::types::ToSql + Sync); 2] =
                            [&"retention", &1i64];
                        client.query(FENCE, &p).await
                    }
                    Action::Work(ms) => {
                        let seconds = ms as f64 / 1_000.0;
                        client.query("SELECT pg_sleep($1)", &[&seconds]).await
                    }
                    Action::DeleteOne => {
                        let p: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
                            [&i64::MAX, &1i64, &0i64];
                        client.query(DELETE_OLDEST, &p).await
                    }
                    Action::Commit => client.batch_execute("COMMIT").await.map(|()| Vec::new()),
                };
                let at = i64::try_from(start.elapsed().as_millis()).expect("short");
                ended.push((at_ms, outcome_of(result, action), at));
            }
            ended
        }));
    }
    let mut ended = Vec::new();
    for task in tasks {
        ended.extend(task.await.expect("no panic"));
    }
    // In the model's order: by start (no two statements start together).
    let mut by_start: Vec<(i64, Outcome, i64)> = ended;
    by_start.sort_by_key(|(at_ms, _, _)| *at_ms);
    admin
        .batch_execute("ALTER SYSTEM SET synchronous_standby_names = ''")
        .await
        .expect("standby names");
    admin
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .expect("reload");
    by_start
        .into_iter()
        .map(|(_, outcome, at)| (outcome, at))
        .collect()
}

#[test]
fn timed_interleavings_agree_with_postgresql() {
    let _alone = crate::alone();
    let server_process = TempServer::start();
    runtime().block_on(async {
        drop(server_process.database("timed", 1).await);
        let url = server_process.url("timed");
        let (admin, _) = connect(&url, Bounds::default()).await;
        admin
            .batch_execute("ALTER DATABASE timed SET synchronous_commit = on")
            .await
            .expect("synchronous commit");
        for story in stories() {
            let expected = model(&story);
            let seen = server(&url, &admin, &story).await;
            eprintln!("{}: model {expected:?}, server {seen:?}", story.name);
            assert_eq!(expected.len(), seen.len(), "{}", story.name);
            for (index, ((want, want_ms), (got, got_ms))) in expected.iter().zip(&seen).enumerate() {
                assert_eq!(want, got, "{}: statement {index}: model {expected:?}, server {seen:?}", story.name);
                assert!(
                    (want_ms - got_ms).abs() <= TOLERANCE_MS,
                    "{}: statement {index} ended at {got_ms} ms on the server, {want_ms} ms in the model",
                    story.name
                );
            }
        }
    });
}
