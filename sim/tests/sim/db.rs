//! The simulated PostgreSQL's rules, one situation each: who waits for the
//! lease row, when each statement reads its clock, and what a transaction's
//! row locks do to other deletes.

use retention_sim::db::{Database, LeaseAnswer, LeaseStatement, Records};
use retention_worker::{FenceRejection, Lease};

const TTL_MS: u64 = 1_000;

fn db_with_rows(created: &[i64]) -> Database {
    let mut records = Records::new();
    for &at in created {
        records.insert(at);
    }
    Database::new(TTL_MS, records)
}

fn acquire(db: &mut Database, id: u64, owner: &str, at_ms: i64) -> Option<LeaseAnswer> {
    let statement = LeaseStatement::Acquire {
        owner: owner.into(),
    };
    db.update_lease(id, statement, at_ms)
        .map(|applied| applied.answer)
}

fn granted(answer: Option<LeaseAnswer>) -> Lease {
    match answer {
        Some(LeaseAnswer::Granted(lease)) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

#[test]
fn a_renewal_waits_for_the_open_delete_and_is_judged_at_its_start() {
    let mut db = db_with_rows(&[1, 2, 3]);
    let lease = granted(acquire(&mut db, 1, "r1", 0));
    let txn = db.begin();
    db.fence(txn, lease.fencing_token, 100).unwrap();
    let renew = LeaseStatement::Renew {
        lease: lease.clone(),
    };
    assert_eq!(db.update_lease(2, renew, 200), None, "waits for FOR SHARE");
    assert_eq!(db.waiting(), vec![2]);
    assert_eq!(db.delete_oldest(txn, 10, 200).len(), 3);
    let (deleted, applied) = db.commit(txn, 1_500);
    assert_eq!(deleted.len(), 3);
    let [renewed] = applied.as_slice() else {
        panic!("one statement was waiting: {applied:?}");
    };
    assert_eq!(
        (renewed.id, renewed.started_ms, renewed.applied_ms),
        (2, 200, 1_500)
    );
    // Past the old lease's expiry (1,000) at commit, but judged at 200: it
    // renews, and its new expiry counts from its start.
    let LeaseAnswer::Granted(new) = &renewed.answer else {
        panic!("{renewed:?}");
    };
    assert_eq!((new.fencing_token, new.expires_at_ms), (2, 1_200));
    assert!(db.waiting().is_empty() && db.fence_holders().is_empty());
}

#[test]
fn a_successor_waits_behind_a_paused_holder_until_its_transaction_ends() {
    let mut db = db_with_rows(&[1]);
    let old = granted(acquire(&mut db, 1, "r1", 0));
    let txn = db.begin();
    db.fence(txn, old.fencing_token, 900).unwrap();
    // The holder pauses; its lease expires at 1,000; the successor asks.
    assert_eq!(acquire(&mut db, 2, "r2", 3_000), None);
    // The holder comes back and deletes under the fence it took before
    // its lease expired: PostgreSQL lets that commit.
    assert_eq!(db.delete_oldest(txn, 10, 200).len(), 1);
    let (deleted, applied) = db.commit(txn, 5_000);
    assert_eq!(deleted.len(), 1);
    let LeaseAnswer::Granted(successor) = &applied[0].answer else {
        panic!("{applied:?}");
    };
    assert_eq!(successor.owner_id, "r2");
    assert_eq!(
        successor.expires_at_ms, 4_000,
        "already expired when granted at 5,000"
    );
}

#[test]
fn statements_naming_another_lease_do_not_wait() {
    let mut db = db_with_rows(&[]);
    let lease = granted(acquire(&mut db, 1, "r1", 0));
    let txn = db.begin();
    db.fence(txn, lease.fencing_token, 10).unwrap();
    let stale = Lease {
        fencing_token: 7,
        ..lease.clone()
    };
    let renew = LeaseStatement::Renew {
        lease: stale.clone(),
    };
    let applied = db.update_lease(2, renew, 20).expect("no match, no wait");
    assert_eq!(applied.answer, LeaseAnswer::Refused);
    let release = LeaseStatement::Release { lease: stale };
    let applied = db.update_lease(3, release, 30).expect("no match, no wait");
    assert_eq!(applied.answer, LeaseAnswer::Cleared { cleared: false });
    // The exact lease waits, even to release it.
    let release = LeaseStatement::Release {
        lease: lease.clone(),
    };
    assert_eq!(db.update_lease(4, release, 40), None);
    // An acquire locks the row before it evaluates its WHERE, so it waits
    // too; queued behind the release, it is granted once that cleared it.
    assert_eq!(acquire(&mut db, 5, "r2", 50), None);
    let applied = db.rollback(txn, 60);
    let answers: Vec<_> = applied.iter().map(|a| (a.id, a.answer.clone())).collect();
    assert_eq!(answers[0], (4, LeaseAnswer::Cleared { cleared: true }));
    assert_eq!(answers[1].0, 5);
    assert!(matches!(&answers[1].1, LeaseAnswer::Granted(l) if l.owner_id == "r2"));
}

#[test]
fn waiters_go_in_arrival_order_and_the_fence_passes_them() {
    let mut db = db_with_rows(&[]);
    let lease = granted(acquire(&mut db, 1, "r1", 0));
    let first = db.begin();
    db.fence(first, lease.fencing_token, 10).unwrap();
    let renew = LeaseStatement::Renew {
        lease: lease.clone(),
    };
    assert_eq!(db.update_lease(2, renew, 20), None);
    assert_eq!(acquire(&mut db, 3, "r2", 30), None);
    // A second fence under the same token is granted at once: share locks
    // pass queued updates.
    let second = db.begin();
    db.fence(second, lease.fencing_token, 40).unwrap();
    assert!(
        db.rollback(first, 50).is_empty(),
        "the second fence still holds"
    );
    let applied = db.commit(second, 60).1;
    assert_eq!(applied.iter().map(|a| a.id).collect::<Vec<_>>(), vec![2, 3]);
    assert!(matches!(applied[0].answer, LeaseAnswer::Granted(_)));
    assert_eq!(
        applied[1].answer,
        LeaseAnswer::Refused,
        "the renewal came first"
    );
}

#[test]
fn a_failed_fence_says_why_and_takes_no_lock() {
    let mut db = db_with_rows(&[]);
    let txn = db.begin();
    assert_eq!(db.fence(txn, 1, 0), Err(FenceRejection::NoHolder));
    let lease = granted(acquire(&mut db, 1, "r1", 0));
    assert_eq!(
        db.fence(txn, lease.fencing_token, 1_000),
        Err(FenceRejection::Expired {
            expires_at_ms: 1_000
        })
    );
    assert_eq!(
        db.fence(txn, 9, 10),
        Err(FenceRejection::StaleToken { current_token: 1 })
    );
    assert!(db.fence_holders().is_empty());
    let renew = LeaseStatement::Renew { lease };
    assert!(
        db.update_lease(2, renew, 20).is_some(),
        "nothing holds the row"
    );
    db.rollback(txn, 30);
}

#[test]
fn skip_locked_leaves_another_transactions_rows_and_a_rollback_returns_them() {
    let mut db = db_with_rows(&[1, 2, 3, 4, 5]);
    let lease = granted(acquire(&mut db, 1, "r1", 0));
    let (a, b) = (db.begin(), db.begin());
    db.fence(a, lease.fencing_token, 10).unwrap();
    db.fence(b, lease.fencing_token, 10).unwrap();
    let first: Vec<i64> = db
        .delete_oldest(a, 10, 3)
        .iter()
        .map(|r| r.created_at_ms)
        .collect();
    assert_eq!(first, vec![1, 2, 3]);
    let second: Vec<i64> = db
        .delete_oldest(b, 10, 3)
        .iter()
        .map(|r| r.created_at_ms)
        .collect();
    assert_eq!(second, vec![4, 5], "a short batch with eligible rows left");
    assert_eq!(db.records().len(), 5, "nothing is gone before a commit");
    db.rollback(a, 20);
    db.commit(b, 30);
    assert_eq!(
        db.records().count_older_than(10),
        3,
        "the rolled-back rows stay"
    );
    let c = db.begin();
    db.fence(c, lease.fencing_token, 40).unwrap();
    assert_eq!(db.delete_oldest(c, 10, 200).len(), 3);
    assert_eq!(db.commit(c, 50).0.len(), 3);
    assert!(db.records().is_empty());
}

#[test]
fn a_revoke_takes_only_the_current_unexpired_lease() {
    let mut db = db_with_rows(&[]);
    let lease = granted(acquire(&mut db, 1, "r1", 0));
    let revoke = |lease: &Lease| LeaseStatement::Revoke {
        lease: lease.clone(),
    };
    let late = db.update_lease(2, revoke(&lease), 1_000).unwrap();
    assert_eq!(late.answer, LeaseAnswer::Cleared { cleared: false });
    let lease = granted(acquire(&mut db, 3, "r2", 1_000));
    let taken = db.update_lease(4, revoke(&lease), 1_500).unwrap();
    assert_eq!(taken.answer, LeaseAnswer::Cleared { cleared: true });
    assert_eq!(db.lease().stored(), None);
    let next = granted(acquire(&mut db, 5, "r3", 1_600));
    assert_eq!(next.fencing_token, 3, "tokens continue after a release");
}
