//! REL-1..3: release the latest lease, compare-and-set, on every exit that may
//! still hold leadership.

use retention_worker::memory::LeaseTable;
use retention_worker::{ReleaseOutcome, TermEnd};

use crate::harness::{Op, Outcome, World, config, fail};
use crate::history::{calls, granted, lease_arg};

#[tokio::test(start_paused = true)]
async fn release_uses_the_latest_renewed_lease() {
    let world = World::new(3_000, 0).with_latency(Op::Delete, 700);
    let report = world.term("r1", config()).await;

    assert_eq!(report.end, TermEnd::Capped);
    let log = world.log();
    let leases = granted(&log, "r1");
    assert!(leases.len() >= 3, "renewed at least twice");
    let releases = calls(&log, "r1", Op::Release);
    assert_eq!(releases.len(), 1);
    assert_eq!(Some(&lease_arg(releases[0])), leases.last(), "REL-1");
    assert_eq!(report.release, ReleaseOutcome::Released);
    assert_eq!(
        world.holder(),
        None,
        "the lease is free for the next replica at once"
    );
}

#[test]
fn release_is_compare_and_set_and_never_frees_a_successor() {
    let mut leases = LeaseTable::new(3_000);
    let first = leases.acquire("r1", 0).unwrap();
    let successor = leases.acquire("r2", 3_000).unwrap();
    assert!(
        !leases.release(&first),
        "REL-2: the expired lease is not the current one"
    );
    assert_eq!(leases.holder(3_001), Some(&successor));
    let renewed = leases.renew(&successor, 3_500).unwrap();
    assert!(
        !leases.release(&successor),
        "REL-2: a superseded lease of the same owner"
    );
    assert!(leases.release(&renewed));
    assert_eq!(leases.holder(3_600), None);
}

#[tokio::test(start_paused = true)]
async fn a_delete_failure_still_releases() {
    let world = World::new(3_000, 0);
    world.script("r1", Op::Delete, 2, fail(Outcome::Reject));
    let report = world.term("r1", config()).await;

    assert!(matches!(report.end, TermEnd::DeleteFailed(_)));
    assert_eq!((report.rows_deleted, report.batches), (200, 1));
    assert_eq!(report.release, ReleaseOutcome::Released, "REL-3");
    assert_eq!(world.holder(), None);
}

#[tokio::test(start_paused = true)]
async fn a_completed_term_releases_and_a_failed_release_is_reported() {
    let world = World::new(100, 0);
    world.script("r1", Op::Release, 1, fail(Outcome::Reject));
    let report = world.term("r1", config()).await;

    assert_eq!(report.end, TermEnd::Completed);
    assert!(matches!(report.release, ReleaseOutcome::Failed(_)));
    assert_eq!(
        calls(&world.log(), "r1", Op::Release).len(),
        1,
        "released exactly once"
    );
    assert!(
        world.holder().is_some(),
        "the lease lapses at its expiry instead"
    );
}
