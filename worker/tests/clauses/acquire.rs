//! ACQ-1: no work without a granted lease.

use retention_worker::{CallErrorKind, ReleaseOutcome, TermEnd};

use crate::harness::{Op, Outcome, What, World, config, fail};
use crate::history::of;

#[tokio::test(start_paused = true)]
async fn null_acquire_ends_the_term_without_renew_delete_or_release() {
    let world = World::new(500, 0);
    let other = world
        .backend
        .with_tables(|leases, _| leases.acquire("other", 0));
    assert!(other.is_some());
    let report = world.term("r1", config()).await;

    assert_eq!(report.end, TermEnd::NotAcquired);
    assert_eq!(report.release, ReleaseOutcome::NotOwed);
    assert_eq!((report.rows_deleted, report.cutoff_ms), (0, None));
    let log = world.log();
    let ops: Vec<_> = of(&log, "r1")
        .iter()
        .map(|e| (e.op, e.what.clone()))
        .collect();
    assert_eq!(
        ops,
        vec![
            (Op::Acquire, What::Call(None, None)),
            (Op::Acquire, What::Lease(None))
        ],
        "ACQ-1: a null acquire is followed by nothing"
    );
    assert_eq!(world.rows_left(), 500);
}

#[tokio::test(start_paused = true)]
async fn failed_acquire_is_reported_and_calls_nothing_else() {
    let world = World::new(500, 0);
    world.script("r1", Op::Acquire, 1, fail(Outcome::Reject));
    let report = world.term("r1", config()).await;

    match report.end {
        TermEnd::AcquireFailed(error) => assert_eq!(error.kind, CallErrorKind::Rejected),
        other => panic!("ACQ-1: expected AcquireFailed, got {other:?}"),
    }
    assert_eq!(report.release, ReleaseOutcome::NotOwed);
    assert_eq!(
        of(&world.log(), "r1").len(),
        2,
        "ACQ-1: only the acquire call and its reply"
    );
}

#[tokio::test(start_paused = true)]
async fn an_ambiguous_acquire_is_not_treated_as_ownership() {
    // The service granted the lease but the reply was lost: the worker does
    // not know its token, so it must not delete, renew or release.
    let world = World::new(500, 0);
    world.script("r1", Op::Acquire, 1, fail(Outcome::LoseReply));
    let report = world.term("r1", config()).await;

    assert!(matches!(report.end, TermEnd::AcquireFailed(_)));
    assert_eq!(of(&world.log(), "r1").len(), 2);
    assert!(
        world.holder().is_some(),
        "the orphaned lease lapses by expiry"
    );
    assert_eq!(world.rows_left(), 500);
}

#[tokio::test(start_paused = true)]
async fn deletion_begins_only_after_the_acquire_reply() {
    let world = World::new(300, 0).with_latency(Op::Acquire, 40);
    let report = world.term("r1", config()).await;

    assert_eq!(report.end, TermEnd::Completed);
    let log = world.log();
    let events = of(&log, "r1");
    let granted_at = events
        .iter()
        .position(|e| matches!(e.what, What::Lease(Some(_))))
        .expect("the lease was granted");
    let first_delete = events.iter().position(|e| e.op == Op::Delete).unwrap();
    assert!(
        granted_at < first_delete,
        "ACQ-1: delete before acquire's reply"
    );
    assert_eq!(events[0].op, Op::Acquire);
}
