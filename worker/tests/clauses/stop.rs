//! STP-1..6: stop prevents new work, joins the work in flight, releases, and
//! is terminal, whenever and however often it is called.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::join;
use retention_worker::{ReleaseOutcome, RunError, TermEnd};
use tokio::time::sleep;

use crate::harness::{Op, What, World, config, delay};
use crate::history::{assert_no_call_from, calls, first_at, granted, lease_arg, of};

async fn stop_at(world: &World, worker: &crate::harness::TestWorker, at_ms: u64) -> i64 {
    sleep(Duration::from_millis(at_ms)).await;
    worker.stop().await;
    world.now_ms()
}

#[tokio::test(start_paused = true)]
async fn stop_before_run_makes_run_return_at_once_without_calls() {
    let world = World::new(500, 0);
    let worker = world.worker("r1", config());

    worker.stop().await;
    worker.stop().await;

    assert_eq!(worker.run().await, Err(RunError::Stopped), "STP-6");
    assert!(world.log().is_empty(), "STP-6: no dependency called");
    assert_eq!(world.now_ms(), 0);
}

#[tokio::test(start_paused = true)]
async fn stop_during_a_delete_awaits_it_then_releases() {
    let world = World::new(3_000, 0).with_latency(Op::Delete, 400);
    let worker = world.worker("r1", config());

    let (report, stopped_at) = join(worker.run(), stop_at(&world, &worker, 1_300)).await;
    let report = report.unwrap();

    assert_eq!(report.end, TermEnd::Stopped);
    let log = world.log();
    // Deletes start at 0, 400, 800, 1200; the last is in flight at 1300.
    assert_eq!(report.batches, 4, "STP-3: the delete in flight completed");
    assert_no_call_from(&log, "r1", Op::Delete, 1_300, "STP-1");
    assert_no_call_from(&log, "r1", Op::Renew, 1_300, "STP-2");
    assert_eq!(report.release, ReleaseOutcome::Released, "STP-4");
    let released_at = first_at(&log, "r1", |e| e.what == What::Released).unwrap();
    assert_eq!(released_at, 1_600);
    assert!(
        stopped_at >= released_at,
        "STP-5: stop resolved after run settled"
    );
}

#[tokio::test(start_paused = true)]
async fn stop_during_a_renewal_awaits_it_and_releases_the_renewed_lease() {
    let world = World::new(3_000, 0).with_latency(Op::Delete, 300);
    world.script("r1", Op::Renew, 1, delay(0, 600));
    let worker = world.worker("r1", config());

    let (report, _) = join(worker.run(), stop_at(&world, &worker, 1_100)).await;
    let report = report.unwrap();

    assert_eq!(report.end, TermEnd::Stopped);
    let log = world.log();
    let renewed = granted(&log, "r1").pop().unwrap();
    assert_eq!(
        renewed.fencing_token, 2,
        "STP-3: the renewal in flight was awaited"
    );
    assert_eq!(
        lease_arg(calls(&log, "r1", Op::Release)[0]),
        renewed,
        "REL-1"
    );
    assert_eq!(calls(&log, "r1", Op::Renew).len(), 1, "STP-2");
    assert_eq!(world.holder(), None);
}

#[tokio::test(start_paused = true)]
async fn stop_racing_acquire_releases_the_lease_it_grants() {
    let world = World::new(3_000, 0);
    world.script("r1", Op::Acquire, 1, delay(300, 300));
    let worker = world.worker("r1", config());

    let (report, stopped_at) = join(worker.run(), stop_at(&world, &worker, 100)).await;
    let report = report.unwrap();

    assert_eq!(report.end, TermEnd::Stopped);
    assert_eq!(report.release, ReleaseOutcome::Released, "STP-4");
    let log = world.log();
    assert!(calls(&log, "r1", Op::Delete).is_empty(), "STP-1");
    assert!(calls(&log, "r1", Op::Renew).is_empty(), "STP-1");
    assert_eq!(report.last_fencing_token, Some(1));
    assert_eq!(
        world.holder(),
        None,
        "STP-4: nobody is locked out until expiry"
    );
    assert_eq!(stopped_at, 600, "STP-5");
}

#[tokio::test(start_paused = true)]
async fn every_concurrent_stop_resolves_only_after_run_settles() {
    let world = World::new(3_000, 0).with_latency(Op::Delete, 400);
    world.latency(Op::Release, 50);
    let worker = world.worker("r1", config());
    let settled = Arc::new(AtomicBool::new(false));

    let run = async {
        let report = worker.run().await;
        settled.store(true, Ordering::SeqCst);
        report
    };
    let stopper = |at_ms: u64| {
        let (worker, settled, world) = (worker.clone(), settled.clone(), world.clone());
        async move {
            sleep(Duration::from_millis(at_ms)).await;
            worker.stop().await;
            assert!(
                settled.load(Ordering::SeqCst),
                "STP-5: stop at {at_ms} ms resolved early"
            );
            world.now_ms()
        }
    };
    let stops = futures_util::future::join3(stopper(500), stopper(500), stopper(700));
    let (report, times) = join(run, stops).await;

    assert_eq!(report.unwrap().end, TermEnd::Stopped);
    assert_eq!(
        times,
        (850, 850, 850),
        "all stops resolve together once release replied"
    );
    worker.stop().await;
    assert_eq!(
        world.now_ms(),
        850,
        "a stop after settling resolves at once"
    );
    assert_eq!(worker.run().await, Err(RunError::Stopped), "STP-6");
    assert_eq!(calls(&world.log(), "r1", Op::Release).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_second_concurrent_run_is_refused() {
    let world = World::new(3_000, 0).with_latency(Op::Delete, 100);
    let worker = world.worker("r1", config());

    let (first, second) = join(worker.run(), worker.run()).await;

    assert_eq!(first.unwrap().end, TermEnd::Capped);
    assert_eq!(second, Err(RunError::AlreadyRunning));
    assert_eq!(calls(&world.log(), "r1", Op::Acquire).len(), 1);
    let next = worker.run().await.unwrap();
    assert_eq!(next.rows_deleted, 1_000, "a later run is fine");
    assert!(of(&world.log(), "r1").len() > 20);
}
