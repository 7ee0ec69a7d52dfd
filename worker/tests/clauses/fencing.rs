//! FEN-1 and FEN-2: every delete carries the latest token; the repository
//! refuses any other.

use retention_worker::memory::{FenceRejection, LeaseTable};
use retention_worker::{CallErrorKind, ReleaseOutcome, TermEnd};

use crate::harness::{Op, World, config, delay};
use crate::history::{assert_deletes_use_latest_token, calls, deletes, lease_arg};

#[tokio::test(start_paused = true)]
async fn every_delete_carries_the_newest_token() {
    let world = World::new(3_000, 0).with_latency(Op::Delete, 350);
    world.latency(Op::Renew, 120);
    let report = world.term("r1", config()).await;

    assert_eq!(report.end, TermEnd::Capped);
    let log = world.log();
    assert_deletes_use_latest_token(&log, "r1");
    let tokens: Vec<u64> = deletes(&log, "r1").iter().map(|d| d.token).collect();
    assert!(tokens.windows(2).all(|w| w[0] <= w[1]));
    assert!(
        tokens.first() < tokens.last(),
        "the term spans renewals: {tokens:?}"
    );
}

#[test]
fn the_lease_model_refuses_stale_expired_and_unheld_tokens() {
    let mut leases = LeaseTable::new(3_000);
    assert_eq!(leases.check_fence(1, 0), Err(FenceRejection::NoHolder));
    let first = leases.acquire("r1", 0).unwrap();
    assert_eq!(leases.check_fence(first.fencing_token, 10), Ok(()));
    let renewed = leases.renew(&first, 1_000).unwrap();
    assert_eq!(
        leases.check_fence(first.fencing_token, 1_000),
        Err(FenceRejection::StaleToken {
            current_token: renewed.fencing_token
        })
    );
    assert_eq!(
        leases.check_fence(renewed.fencing_token, 4_000),
        Err(FenceRejection::Expired {
            expires_at_ms: 4_000
        })
    );
    assert_eq!(
        leases.renew(&first, 1_500),
        None,
        "only the exact current lease renews"
    );
    assert!(leases.acquire("r2", 3_999).is_none(), "held until expiry");
    let successor = leases.acquire("r2", 4_000).unwrap();
    assert!(
        successor.fencing_token > renewed.fencing_token,
        "tokens are one global counter"
    );
}

#[tokio::test(start_paused = true)]
async fn a_delete_that_raced_its_own_renewal_is_retried_with_the_new_token() {
    // The service rotates the token at 1000 ms but its reply takes 500 ms:
    // the delete issued at 1200 ms carries the old token and is refused whole
    // (FEN-2). Once the renewal lands, the worker goes on with the new token.
    let world = World::new(3_000, 0).with_latency(Op::Delete, 300);
    world.script("r1", Op::Renew, 1, delay(0, 500));
    let report = world.term("r1", config()).await;

    assert_eq!(report.end, TermEnd::Capped);
    assert_eq!(report.rows_deleted, 1_000);
    let log = world.log();
    let sent: Vec<(i64, u64)> = calls(&log, "r1", Op::Delete)
        .iter()
        .map(|e| e.at_ms)
        .zip(deletes(&log, "r1").iter().map(|d| d.token))
        .collect();
    assert_eq!(sent[4], (1_200, 1), "the refused delete");
    assert_eq!(
        sent[5],
        (1_500, 2),
        "the retry, as soon as the renewal replied"
    );
    assert_deletes_use_latest_token(&log, "r1");
}

#[tokio::test(start_paused = true)]
async fn a_delete_fenced_by_a_successor_ends_the_term_without_freeing_it() {
    // At 1100 ms, while r1's renewal reply is still in flight, an intruder
    // takes the lease. r1's retry with its renewed token is refused too.
    let world = World::new(3_000, 0).with_latency(Op::Delete, 300);
    world.script("r1", Op::Renew, 1, delay(0, 500));
    let worker = world.worker("r1", config());
    let intrude = async {
        tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
        world.backend.with_tables(|leases, _| {
            let held = leases.holder(1_100).cloned().unwrap();
            assert!(leases.release(&held));
            leases.acquire("intruder", 1_100).unwrap()
        })
    };

    let (report, intruder) = futures_util::future::join(worker.run(), intrude).await;
    let report = report.unwrap();

    match &report.end {
        TermEnd::DeleteFailed(error) => assert_eq!(error.kind, CallErrorKind::Fenced),
        other => panic!("expected a fenced delete, got {other:?}"),
    }
    let log = world.log();
    let tokens: Vec<u64> = deletes(&log, "r1").iter().map(|d| d.token).collect();
    assert_eq!(
        &tokens[4..],
        &[1, 2],
        "one retry with the renewed token, then give up"
    );
    let release = lease_arg(calls(&log, "r1", Op::Release)[0]);
    assert_eq!(
        release.fencing_token, 2,
        "REL-1: the renewal was joined before release"
    );
    assert_eq!(report.release, ReleaseOutcome::Released);
    assert_eq!(
        world.holder(),
        Some(intruder),
        "REL-2: the successor keeps its lease"
    );
}
