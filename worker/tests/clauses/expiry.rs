//! The worker's own expiry guard: no delete starts when the held lease is
//! within `expiry_margin_ms` of expiring on the worker's clock.

use retention_worker::{LossCause, ReleaseOutcome, TermEnd};

use crate::harness::{Op, World, config, delay};
use crate::history::{calls, deletes};

#[tokio::test(start_paused = true)]
async fn deletes_pause_near_expiry_until_a_late_renewal_lands() {
    let world = World::new(3_000, 0).with_latency(Op::Delete, 350);
    world.script("r1", Op::Renew, 1, delay(1_900, 0));
    let mut config = config();
    config.batch_size = 100;
    let report = world.term("r1", config).await;

    assert_eq!(report.end, TermEnd::Capped);
    let log = world.log();
    let started: Vec<i64> = calls(&log, "r1", Op::Delete)
        .iter()
        .map(|e| e.at_ms)
        .collect();
    assert!(
        started.iter().all(|&t| !(2_800..2_900).contains(&t)),
        "no delete within 200 ms of the 3000 ms expiry: {started:?}"
    );
    assert!(
        started.contains(&2_900),
        "deletes resume when the renewal lands: {started:?}"
    );
    let tokens: Vec<u64> = deletes(&log, "r1").iter().map(|d| d.token).collect();
    assert_eq!(tokens[8], 2, "the resumed delete carries the renewed token");
}

#[tokio::test(start_paused = true)]
async fn a_lease_expired_on_the_worker_clock_is_lost_without_renewing() {
    // The replica's clock runs 2.3 s ahead: the lease granted until 3000 ms
    // looks expired to it by the first renewal at 1000 ms.
    let world = World::new(3_000, 0).with_latency(Op::Delete, 300);
    let worker = world.skewed_worker("r1", config(), 2_300);

    let report = worker.run().await.unwrap();

    assert_eq!(
        report.end,
        TermEnd::LeadershipLost(LossCause::ExpiredBeforeRenewal)
    );
    let log = world.log();
    assert!(calls(&log, "r1", Op::Renew).is_empty());
    let started: Vec<i64> = calls(&log, "r1", Op::Delete)
        .iter()
        .map(|e| e.at_ms)
        .collect();
    assert_eq!(
        started,
        vec![0, 300],
        "the guard (2800 ms on its clock) stops the third"
    );
    assert_eq!(report.release, ReleaseOutcome::Released);
}

#[tokio::test(start_paused = true)]
async fn a_clock_so_far_ahead_that_fresh_leases_look_expired_gives_up() {
    let world = World::new(3_000, 0);
    let mut config = config();
    config.renew_interval_ms = 500;
    config.expiry_margin_ms = 2_000;
    let worker = world.skewed_worker("r1", config, 2_200);

    let report = worker.run().await.unwrap();

    assert_eq!(
        report.end,
        TermEnd::LeadershipLost(LossCause::LeaseTooShort)
    );
    assert!(calls(&world.log(), "r1", Op::Delete).is_empty());
    assert_eq!(report.renewals, 1);
    assert_eq!(report.release, ReleaseOutcome::Released);
    assert_eq!(world.holder(), None);
}
