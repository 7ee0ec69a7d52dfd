//! The simulated PostgreSQL's rules, one situation each: who waits for the
//! lease row, when each statement reads its clock, what a transaction's
//! row locks do to other deletes, and PostgreSQL's timing rules (a fresh
//! `lock_timeout` per lock acquisition attempt, an error's abort letting go
//! of locks at once, commits that hold their locks until durable).

#[path = "../common/db_driver.rs"]
mod db_driver;

use db_driver::Driver;
use retention_sim::db::{Answer, Bounds, LeaseAnswer, LeaseStatement, Refusal};
use retention_worker::{FenceRejection, Lease};

const TTL_MS: u64 = 1_000;

fn acquire(owner: &str) -> LeaseStatement {
    LeaseStatement::Acquire {
        owner: owner.into(),
    }
}

fn renew(lease: &Lease) -> LeaseStatement {
    LeaseStatement::Renew {
        lease: lease.clone(),
    }
}

fn granted(db: &Driver, id: u64) -> Lease {
    match db.lease_answer(id) {
        Some((_, Ok(LeaseAnswer::Granted(lease)))) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// A database with `ttl_ms` leases, the rows created at `rows_at_ms` and
/// `bounds`, whose lease r1 was granted at 0 ms on session 1.
fn held_by_r1(ttl_ms: u64, rows_at_ms: &[i64], bounds: Bounds) -> (Driver, Lease) {
    let mut db = Driver::new(ttl_ms, rows_at_ms, bounds);
    let first = db.lease(0, 1, acquire("r1"));
    let lease = granted(&db, first);
    (db, lease)
}

fn bounds(lock_ms: u64, statement_ms: u64) -> Bounds {
    Bounds {
        statement_ms,
        lock_ms,
        idle_in_transaction_ms: 0,
    }
}

#[test]
fn a_renewal_waits_for_the_open_delete_and_is_judged_at_its_start() {
    let (mut db, lease) = held_by_r1(TTL_MS, &[1, 2, 3], Bounds::default());
    let txn = db.begin(100, 2);
    db.fence(100, 2, txn, lease.fencing_token);
    let renewal = db.lease(200, 3, renew(&lease));
    assert_eq!(db.answer(renewal), None, "waits for FOR SHARE");
    assert_eq!(db.db.waiting(), vec![renewal]);
    let delete = db.delete(300, 2, txn, (10, 200, 0));
    assert_eq!(db.rows(delete).len(), 3);
    let commit = db.commit(1_500, 2, txn);
    assert_eq!(db.rows(commit).len(), 3);
    // Past the old lease's expiry (1,000) at commit, but judged at 200: it
    // renews, and its new expiry counts from its start.
    let (at, answer) = db.lease_answer(renewal).expect("answered at the commit");
    let Ok(LeaseAnswer::Granted(new)) = answer else {
        panic!("{answer:?}");
    };
    assert_eq!(
        (at, new.fencing_token, new.expires_at_ms),
        (1_500, 2, 1_200)
    );
    assert!(db.db.waiting().is_empty() && db.db.fence_holders().is_empty());
}

#[test]
fn a_successor_waits_behind_a_paused_holder_until_its_transaction_ends() {
    let (mut db, old) = held_by_r1(TTL_MS, &[1], Bounds::default());
    let txn = db.begin(900, 2);
    db.fence(900, 2, txn, old.fencing_token);
    // The holder pauses; its lease expires at 1,000; the successor asks.
    let successor = db.lease(3_000, 3, acquire("r2"));
    assert_eq!(db.answer(successor), None);
    // The holder comes back and deletes under the fence it took before its
    // lease expired: PostgreSQL lets that commit.
    let delete = db.delete(5_000, 2, txn, (10, 200, 0));
    assert_eq!(db.rows(delete).len(), 1);
    db.commit(5_000, 2, txn);
    let lease = granted(&db, successor);
    assert_eq!(lease.owner_id, "r2");
    assert_eq!(
        lease.expires_at_ms, 4_000,
        "already expired when granted at 5,000"
    );
}

#[test]
fn statements_naming_another_lease_do_not_wait() {
    let (mut db, lease) = held_by_r1(TTL_MS, &[], Bounds::default());
    let txn = db.begin(10, 2);
    db.fence(10, 2, txn, lease.fencing_token);
    let stale = Lease {
        fencing_token: 7,
        ..lease.clone()
    };
    let renewal = db.lease(20, 3, renew(&stale));
    assert_eq!(
        db.lease_answer(renewal),
        Some((20, Ok(LeaseAnswer::Refused)))
    );
    let release = db.lease(30, 4, LeaseStatement::Release { lease: stale });
    let cleared_nothing = Ok(LeaseAnswer::Cleared { cleared: false });
    assert_eq!(db.lease_answer(release), Some((30, cleared_nothing)));
    // The exact lease waits, even to release it; an acquire locks the row
    // before it evaluates its WHERE, so it waits too, behind the release.
    let release = db.lease(40, 4, LeaseStatement::Release { lease });
    let successor = db.lease(50, 5, acquire("r2"));
    assert_eq!(db.db.waiting(), vec![release, successor]);
    db.rollback(60, 2, txn);
    let cleared = Ok(LeaseAnswer::Cleared { cleared: true });
    assert_eq!(db.lease_answer(release), Some((60, cleared)));
    assert_eq!(granted(&db, successor).owner_id, "r2");
}

#[test]
fn waiters_go_in_arrival_order_and_the_fence_passes_them() {
    let (mut db, lease) = held_by_r1(TTL_MS, &[], Bounds::default());
    let a = db.begin(10, 2);
    db.fence(10, 2, a, lease.fencing_token);
    let renewal = db.lease(20, 3, renew(&lease));
    let successor = db.lease(30, 4, acquire("r2"));
    // A second fence under the same token is granted at once: share locks
    // pass queued updates.
    let b = db.begin(40, 5);
    let second = db.fence(40, 5, b, lease.fencing_token);
    assert_eq!(db.fence_answer(second), Some(Ok(())));
    db.rollback(50, 2, a);
    assert_eq!(db.answer(renewal), None, "the second fence still holds");
    db.commit(60, 5, b);
    assert!(matches!(
        db.lease_answer(renewal),
        Some((60, Ok(LeaseAnswer::Granted(_))))
    ));
    let refused = Some((60, Ok(LeaseAnswer::Refused)));
    assert_eq!(
        db.lease_answer(successor),
        refused,
        "the renewal came first"
    );
}

#[test]
fn a_failed_fence_says_why_and_takes_no_lock() {
    let mut db = Driver::new(TTL_MS, &[], Bounds::default());
    let txn = db.begin(0, 2);
    let no_holder = db.fence(0, 2, txn, 1);
    assert_eq!(
        db.fence_answer(no_holder),
        Some(Err(FenceRejection::NoHolder))
    );
    let first = db.lease(0, 1, acquire("r1"));
    let lease = granted(&db, first);
    let expired = db.fence(1_000, 2, txn, lease.fencing_token);
    let rejection = FenceRejection::Expired {
        expires_at_ms: 1_000,
    };
    assert_eq!(db.fence_answer(expired), Some(Err(rejection)));
    let stale = db.fence(1_000, 2, txn, 9);
    let rejection = FenceRejection::StaleToken { current_token: 1 };
    assert_eq!(db.fence_answer(stale), Some(Err(rejection)));
    assert!(db.db.fence_holders().is_empty());
    db.rollback(1_000, 2, txn);
}

#[test]
fn skip_locked_leaves_another_transactions_rows_and_a_rollback_returns_them() {
    let mut db = Driver::new(TTL_MS, &[1, 2, 3, 4, 5], Bounds::default());
    let first = db.lease(0, 1, acquire("r1"));
    let token = granted(&db, first).fencing_token;
    let (a, b) = (db.begin(10, 2), db.begin(10, 3));
    db.fence(10, 2, a, token);
    db.fence(10, 3, b, token);
    let created = |db: &Driver, id| {
        db.rows(id)
            .iter()
            .map(|r| r.created_at_ms)
            .collect::<Vec<_>>()
    };
    let one = db.delete(10, 2, a, (10, 3, 0));
    assert_eq!(created(&db, one), vec![1, 2, 3]);
    let two = db.delete(10, 3, b, (10, 3, 0));
    assert_eq!(
        created(&db, two),
        vec![4, 5],
        "a short batch with eligible rows left"
    );
    assert_eq!(db.db.records().len(), 5, "nothing is gone before a commit");
    db.rollback(20, 2, a);
    db.commit(30, 3, b);
    assert_eq!(
        db.db.records().count_older_than(10),
        3,
        "the rolled-back rows stay"
    );
    let last = db.begin(40, 2);
    db.fence(40, 2, last, token);
    db.delete(40, 2, last, (10, 200, 0));
    assert!(!db.db.records().is_empty(), "deleted, not yet committed");
    db.commit(40, 2, last);
    assert!(db.db.records().is_empty(), "every row gone");
}

#[test]
fn lock_timeout_is_armed_afresh_for_each_holder_waited_for() {
    // Two fences, each held under a second but overlapping: a renewal
    // waits for the first, then the second, and is granted 1.7 s after it
    // was sent with lock_timeout at 1 s (PostgreSQL 15: granted at 1.81 s).
    let (mut db, lease) = held_by_r1(10_000, &[], bounds(1_000, 0));
    let (a, b) = (db.begin(0, 2), db.begin(0, 3));
    db.fence(130, 2, a, lease.fencing_token);
    let renewal = db.lease(140, 4, renew(&lease));
    db.fence(500, 3, b, lease.fencing_token);
    db.commit(920, 2, a);
    assert_eq!(db.attempts(renewal), vec![(140, 1), (920, 2)]);
    db.commit(1_810, 3, b);
    let (at, answer) = db.lease_answer(renewal).expect("answered");
    assert!(matches!(answer, Ok(LeaseAnswer::Granted(_))), "{answer:?}");
    assert_eq!(
        at, 1_810,
        "granted after 1,670 ms of waiting, each wait under 1 s"
    );
}

#[test]
fn a_waiter_behind_another_restarts_its_timer_only_when_it_reaches_the_head() {
    // One fence held 2.5 s; three lease statements queue behind it with
    // lock_timeout at 1 s. The head fails at 1 s; the second then waits
    // for the fence afresh and fails a second later; the third, still
    // behind the second, fails 1 s after it was sent (PostgreSQL 15: 1.105,
    // 2.106 and 1.505 s).
    let (mut db, lease) = held_by_r1(10_000, &[], bounds(1_000, 0));
    let txn = db.begin(0, 2);
    db.fence(0, 2, txn, lease.fencing_token);
    let one = db.lease(100, 3, renew(&lease));
    let two = db.lease(300, 4, renew(&lease));
    let three = db.lease(500, 5, acquire("r2"));
    db.advance(2_500);
    let failed_at = |db: &Driver, id| match db.lease_answer(id) {
        Some((at, Err(why))) if why.starts_with("lock timeout") => at,
        other => panic!("statement {id}: {other:?}"),
    };
    assert_eq!(
        [
            failed_at(&db, one),
            failed_at(&db, two),
            failed_at(&db, three)
        ],
        [1_100, 2_100, 1_500]
    );
}

#[test]
fn statement_timeout_bounds_the_whole_statement_across_attempts() {
    let (mut db, lease) = held_by_r1(10_000, &[], bounds(1_000, 1_500));
    let (a, b) = (db.begin(0, 2), db.begin(0, 3));
    db.fence(0, 2, a, lease.fencing_token);
    let renewal = db.lease(100, 4, renew(&lease));
    db.fence(200, 3, b, lease.fencing_token);
    db.commit(900, 2, a);
    db.advance(3_000);
    let (at, answer) = db.lease_answer(renewal).expect("failed");
    assert!(
        matches!(&answer, Err(why) if why.starts_with("statement timeout")),
        "{answer:?}"
    );
    assert_eq!(at, 1_600, "its start plus statement_timeout");
}

#[test]
fn an_error_in_a_transaction_releases_its_locks_at_once_and_commit_answers_rollback() {
    // statement_timeout cuts the delete: its share lock and rows go then, a
    // queued renewal is granted at that instant, and the session's later
    // COMMIT is answered ROLLBACK with no error (PostgreSQL 15: granted
    // 3 ms after the cut; COMMIT printed the tag ROLLBACK).
    let (mut db, lease) = held_by_r1(10_000, &[1, 2, 3], bounds(0, 500));
    let txn = db.begin(0, 2);
    db.fence(0, 2, txn, lease.fencing_token);
    assert_eq!(
        db.db.fence_holders(),
        [txn],
        "the passed fence holds its share"
    );
    let delete = db.delete(110, 2, txn, (10, 200, 2_000));
    let renewal = db.lease(200, 3, renew(&lease));
    db.advance(650);
    assert!(matches!(
        db.answer(delete),
        Some((610, Err(Refusal::Cut(_))))
    ));
    assert!(matches!(
        db.lease_answer(renewal),
        Some((610, Ok(LeaseAnswer::Granted(_))))
    ));
    assert!(db.db.fence_holders().is_empty());
    assert_eq!(
        db.db.records().count_older_than(10),
        3,
        "the rows stay, unlocked"
    );
    let again = db.delete(700, 2, txn, (10, 200, 0));
    assert!(matches!(
        db.answer(again),
        Some((_, Err(Refusal::Failed(_))))
    ));
    assert!(db.db.is_open(txn), "aborted, and open until it ends");
    let commit = db.commit(800, 2, txn);
    assert_eq!(
        db.answer(commit),
        Some(&(800, Ok(Answer::CommitRolledBack)))
    );
    assert!(!db.db.is_open(txn));
}

#[test]
fn a_commit_holds_its_locks_until_durable_and_statement_timeout_does_not_cut_it() {
    let mut db = Driver::new(10_000, &[1, 2], bounds(0, 300));
    db.commit_ms = 1_000;
    let first = db.lease(0, 1, acquire("r1"));
    assert_eq!(db.answer(first), None, "the grant waits for its commit");
    assert!(
        db.db.lease().stored().is_none(),
        "not visible before durable"
    );
    db.advance(1_000);
    let lease = granted(&db, first);
    let txn = db.begin(1_000, 2);
    db.fence(1_000, 2, txn, lease.fencing_token);
    db.delete(1_000, 2, txn, (10, 200, 0));
    let commit = db.commit(1_100, 2, txn);
    db.advance(1_900);
    assert_eq!(
        db.answer(commit),
        None,
        "past statement_timeout, still committing"
    );
    let renewal = db.lease(2_000, 3, renew(&lease));
    db.advance(2_050);
    assert_eq!(
        db.answer(renewal),
        None,
        "the share lock is held through the commit"
    );
    db.advance(2_100);
    assert_eq!(db.rows(commit).len(), 2);
    // The renewal took the row at 2,100 and now commits for a second.
    assert_eq!(db.answer(renewal), None);
    db.advance(3_100);
    assert!(matches!(
        db.lease_answer(renewal),
        Some((3_100, Ok(LeaseAnswer::Granted(_))))
    ));
}

#[test]
fn a_refused_acquire_holds_the_row_through_its_commit_and_a_fence_waits_behind_it() {
    let (mut db, lease) = held_by_r1(10_000, &[], bounds(0, 0));
    db.commit_ms = 500;
    let refused = db.lease(100, 2, acquire("r2"));
    let txn = db.begin(200, 3);
    let fence = db.fence(200, 3, txn, lease.fencing_token);
    assert_eq!(
        db.fence_answer(fence),
        None,
        "waits behind the committing acquire"
    );
    db.advance(600);
    assert_eq!(
        db.lease_answer(refused),
        Some((600, Ok(LeaseAnswer::Refused)))
    );
    assert_eq!(
        db.fence_answer(fence),
        Some(Ok(())),
        "judged at its start, row unchanged"
    );
}

#[test]
fn a_standby_that_stops_answering_holds_commits_until_a_cancel() {
    let mut db = Driver::new(10_000, &[], bounds(1_000, 1_000));
    db.standby(0, false);
    let first = db.lease(0, 1, acquire("r1"));
    db.advance(60_000);
    assert_eq!(
        db.answer(first),
        None,
        "no bound cuts the wait for the standby"
    );
    let second = db.lease(60_000, 2, acquire("r2"));
    db.advance(61_500);
    assert!(
        matches!(db.lease_answer(second), Some((61_000, Err(_)))),
        "lock timeout"
    );
    // The client's cancel ends the wait: committed locally.
    db.cancel(61_500, 1);
    assert!(matches!(
        db.lease_answer(first),
        Some((61_500, Ok(LeaseAnswer::Granted(_))))
    ));
    assert!(db.db.lease().stored().is_some());
}

#[test]
fn a_session_the_server_ended_runs_nothing_more_and_a_parse_keeps_it_alive() {
    let idle = Bounds {
        idle_in_transaction_ms: 500,
        ..Bounds::default()
    };
    let (mut db, lease) = held_by_r1(TTL_MS, &[1, 2, 3], idle);
    // Session 2 idles in its transaction; a Parse at 400 starts a new
    // idle stretch, so at 500 it is still alive; at 901 it is ended.
    let txn = db.begin(0, 2);
    db.db.protocol_exchange(400, 2);
    db.advance(899);
    assert!(!db.db.session_ended(2), "a Parse re-arms the idle bound");
    db.advance(901);
    assert!(db.db.session_ended(2));
    // Whatever comes next on it finds the connection closed: the fence
    // (its transaction is gone), a lease statement, a new BEGIN.
    let fence = db.fence(950, 2, txn, lease.fencing_token);
    assert!(matches!(
        db.answer(fence),
        Some((_, Err(Refusal::Closed(_))))
    ));
    let renewal = db.lease(960, 2, renew(&lease));
    assert!(matches!(
        db.answer(renewal),
        Some((_, Err(Refusal::Closed(_))))
    ));
    let begin = db.send(970, 2, retention_sim::db::Request::Begin);
    assert!(matches!(
        db.answer(begin),
        Some((_, Err(Refusal::Closed(_))))
    ));
    // Another session is untouched.
    let other = db.lease(980, 3, renew(&lease));
    assert!(matches!(
        db.lease_answer(other),
        Some((_, Ok(LeaseAnswer::Granted(_))))
    ));
}
