//! The clock probes at their edges, on hand-written histories: a lease is
//! valid while the database's clock reads before its expiry and expired
//! from that instant on, and a step forward moves the clock on.

use retention_sim::checker::coverage;
use retention_sim::model::{
    Actor, EventKind, Invocation, LeaseRec, LossRec, OpKind, Outcome, TermEndRec,
};

use crate::checker::{Script, lease, term_ended};

/// r1's term under a lease valid until 3,000 ms (by the database's clock,
/// which here keeps the run's time): acquired at 0.
fn r1_holding_until_3000() -> (Script, LeaseRec) {
    let held = lease("r1", 1, 3_000);
    let mut script = Script::new();
    script.at(0).call(1, 1, 1, Invocation::Acquire);
    script.granted_to_r1(1, OpKind::Acquire, held.clone());
    (script, held)
}

fn count(script: &Script, probe: &str) -> u64 {
    coverage(&script.history())[probe]
}

/// The term gives up at `end_ms` for an expiry its clock, stepped by
/// `step_ms` at 100 ms, read.
fn gave_up(step_ms: i64, end_ms: i64) -> u64 {
    let (mut script, _) = r1_holding_until_3000();
    let step = EventKind::ClockStepped {
        from_ms: 100,
        to_ms: 100 + step_ms,
    };
    script.at(100).push(Actor::Replica(1), 1, step);
    let mut ended = term_ended();
    if let EventKind::TermEnded { end, .. } = &mut ended {
        *end = TermEndRec::LeadershipLost(LossRec::ExpiredBeforeRenewal);
    }
    script.at(end_ms).push(Actor::Replica(1), 1, ended);
    count(&script, "guard-gave-up-after-a-step-forward")
}

#[test]
fn a_guard_gave_up_after_a_step_forward_only_on_a_lease_still_valid() {
    assert_eq!(gave_up(1, 2_999), 1, "a step of 1 ms is forward");
    assert_eq!(gave_up(0, 2_999), 0, "a step of 0 ms is not");
    assert_eq!(gave_up(-1, 2_999), 0, "nor is one back");
    assert_eq!(gave_up(1, 3_000), 0, "the lease expired at 3,000 ms");
}

/// r1's clock runs at half speed; it sends a renewal of its lease at
/// `sent_ms`, answered granted at `answered_ms`.
fn renewal_sent(sent_ms: i64, answered_ms: i64) -> Script {
    let (mut script, held) = r1_holding_until_3000();
    let slow = EventKind::ClockRateSet {
        rate_permille: 500,
        reading_ms: 50,
    };
    script.at(50).push(Actor::Replica(1), 1, slow);
    script
        .at(sent_ms)
        .call(1, 1, 2, Invocation::Renew { lease: held });
    let renewed = Outcome::Lease(Some(lease("r1", 2, answered_ms + 3_000)));
    script
        .at(answered_ms)
        .reply(1, 1, 2, OpKind::Renew, renewed);
    script
}

#[test]
fn a_renewal_is_late_from_the_instant_its_lease_expired() {
    let late = |sent_ms, answered_ms| {
        let script = renewal_sent(sent_ms, answered_ms);
        (
            count(&script, "renewal-sent-late-by-a-slow-clock"),
            count(&script, "renewal-after-expiry"),
        )
    };
    assert_eq!(late(2_998, 2_999), (0, 0));
    assert_eq!(late(2_999, 3_000), (0, 1), "answered as the lease expired");
    assert_eq!(late(3_000, 3_001), (1, 1), "sent as the lease expired");
}

/// r1, holding its lease until 3,000 ms, is paused (or cut off) at
/// `from_ms` for `for_ms`: the lease is valid through every instant of a
/// pause that ends as it expires, and gone before one that starts then.
#[test]
fn a_pause_outlived_the_lease_only_if_it_expired_inside_the_pause() {
    let outlived = |from_ms: i64, for_ms: u64| {
        let mut counts = Vec::new();
        for (kind, probe) in [
            (EventKind::Paused { for_ms }, "pause-outlived-the-lease"),
            (EventKind::Partitioned { for_ms }, "cut-outlived-the-lease"),
        ] {
            let (mut script, _) = r1_holding_until_3000();
            script.at(from_ms).push(Actor::Replica(1), 1, kind);
            counts.push(count(&script, probe));
        }
        counts
    };
    assert_eq!(
        outlived(3_000, 500),
        [0, 0],
        "it began as the lease expired"
    );
    assert_eq!(outlived(2_999, 500), [1, 1]);
    assert_eq!(outlived(2_000, 1_001), [1, 1]);
    assert_eq!(
        outlived(2_000, 1_000),
        [0, 0],
        "it ended as the lease expired"
    );
}
