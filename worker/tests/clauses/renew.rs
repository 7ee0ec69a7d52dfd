//! REN-1..3: one renewal at a time, always of the latest lease, and every
//! failure through one loss path.

use retention_worker::{CallErrorKind, LossCause, ReleaseOutcome, TermEnd};

use crate::harness::{Op, Outcome, What, World, config, delay, fail};
use crate::history::{
    assert_deletes_use_latest_token, assert_no_call_from, calls, first_at, granted, lease_arg,
    max_in_flight,
};

/// A term long enough for several renewals: 10 batches of 100 rows, 600 ms each.
fn long_term(world: &World) -> retention_worker::WorkerConfig {
    world.latency(Op::Delete, 600);
    let mut config = config();
    config.batch_size = 100;
    config
}

#[tokio::test(start_paused = true)]
async fn slow_renewals_never_overlap() {
    let world = World::new(2_000, 0);
    let config = long_term(&world);
    world.script("r1", Op::Renew, 1, delay(1_500, 0));
    world.script("r1", Op::Renew, 2, delay(1_500, 0));
    let report = world.term("r1", config).await;

    assert_eq!(report.end, TermEnd::Capped);
    let log = world.log();
    assert_eq!(max_in_flight(&log, "r1", Op::Renew), 1, "REN-1");
    let renews = calls(&log, "r1", Op::Renew);
    assert!(renews.len() >= 2, "several renewals: {renews:?}");
    assert_eq!(
        renews[1].at_ms, 3_500,
        "the next renewal waits a full interval after the reply"
    );
    assert_eq!(report.renewals as usize, renews.len());
}

#[tokio::test(start_paused = true)]
async fn each_renewal_sends_the_latest_lease_and_replaces_it() {
    let world = World::new(2_000, 0);
    let config = long_term(&world);
    let report = world.term("r1", config).await;

    let log = world.log();
    let leases = granted(&log, "r1");
    assert!(
        leases.len() >= 5,
        "acquire and several renewals: {leases:?}"
    );
    for (renew, previous) in calls(&log, "r1", Op::Renew).iter().zip(&leases) {
        assert_eq!(
            &lease_arg(renew),
            previous,
            "REN-2: renew must send the latest lease"
        );
    }
    assert!(
        leases
            .windows(2)
            .all(|w| w[0].fencing_token < w[1].fencing_token)
    );
    assert_eq!(
        report.last_fencing_token,
        leases.last().map(|l| l.fencing_token)
    );
    assert_deletes_use_latest_token(&log, "r1");
}

#[tokio::test(start_paused = true)]
async fn a_null_renewal_stops_deletes_and_renewals_and_owes_no_release() {
    let world = World::new(2_000, 0).with_latency(Op::Delete, 400);
    world.script("r1", Op::Renew, 1, fail(Outcome::Null));
    let report = world.term("r1", config()).await;

    assert_eq!(report.end, TermEnd::LeadershipLost(LossCause::NullRenewal));
    assert_eq!(report.release, ReleaseOutcome::NotOwed);
    let log = world.log();
    let lost_at = first_at(&log, "r1", |e| e.what == What::Lease(None)).unwrap();
    assert_eq!(lost_at, 1_000);
    assert_no_call_from(&log, "r1", Op::Delete, lost_at, "REN-3");
    assert_eq!(
        calls(&log, "r1", Op::Renew).len(),
        1,
        "REN-3: no renewal after the loss"
    );
    assert!(
        calls(&log, "r1", Op::Release).is_empty(),
        "REL-3: no release owed"
    );
    assert_eq!(
        report.batches, 3,
        "the delete in flight at the loss completes (STP-3)"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_renewal_is_a_loss_that_still_releases() {
    let world = World::new(2_000, 0).with_latency(Op::Delete, 400);
    world.script("r1", Op::Renew, 1, fail(Outcome::Reject));
    let report = world.term("r1", config()).await;

    match &report.end {
        TermEnd::LeadershipLost(LossCause::RenewalFailed(error)) => {
            assert_eq!(error.kind, CallErrorKind::Rejected)
        }
        other => panic!("REN-3: expected a renewal failure loss, got {other:?}"),
    }
    let log = world.log();
    assert_no_call_from(&log, "r1", Op::Delete, 1_000, "REN-3");
    assert_eq!(calls(&log, "r1", Op::Renew).len(), 1);
    assert_eq!(
        report.release,
        ReleaseOutcome::Released,
        "REL-3 allows it; CAS makes it safe"
    );
    assert_eq!(world.holder(), None);
}

#[tokio::test(start_paused = true)]
async fn a_renewal_unanswered_at_expiry_is_a_loss_but_is_still_awaited() {
    let world = World::new(2_000, 0);
    let config = long_term(&world);
    world.script("r1", Op::Renew, 1, delay(5_000, 0));
    let report = world.term("r1", config).await;

    assert_eq!(
        report.end,
        TermEnd::LeadershipLost(LossCause::RenewalUnanswered)
    );
    let log = world.log();
    // The lease granted at 0 expires at 3000; the 200 ms margin stops deletes at 2800.
    assert_no_call_from(&log, "r1", Op::Delete, 2_800, "expiry guard");
    let reply_at = first_at(&log, "r1", |e| {
        e.op == Op::Renew && !matches!(e.what, What::Call(..))
    });
    assert_eq!(
        reply_at,
        Some(6_000),
        "STP-3: the renewal was not abandoned"
    );
    assert!(
        world.now_ms() >= 6_000,
        "run() returned only after the reply"
    );
    assert_eq!(
        report.release,
        ReleaseOutcome::NotOwed,
        "the late reply said the lease is gone"
    );
}

#[tokio::test(start_paused = true)]
async fn an_ambiguous_renewal_rotates_the_token_unseen_and_stops_work() {
    let world = World::new(2_000, 0).with_latency(Op::Delete, 400);
    world.script("r1", Op::Renew, 1, fail(Outcome::LoseReply));
    let worker = world.worker("r1", config());

    let report = worker.run().await.unwrap();

    assert!(matches!(
        &report.end,
        TermEnd::LeadershipLost(LossCause::RenewalFailed(e)) if e.kind == CallErrorKind::Ambiguous
    ));
    let log = world.log();
    assert_no_call_from(&log, "r1", Op::Delete, 1_000, "REN-3");
    let released = lease_arg(calls(&log, "r1", Op::Release)[0]);
    assert_eq!(
        released.fencing_token, 1,
        "REL-1: the latest lease the worker knows"
    );
    let holder = world
        .holder()
        .expect("the rotated lease is still held server-side");
    assert_eq!(
        holder.fencing_token, 2,
        "REL-2: the release could not free a lease it did not name"
    );
}
