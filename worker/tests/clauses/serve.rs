//! The service loop: terms on a schedule with seeded jitter, a backoff after
//! a loss, several replicas sharing one backlog, and stop at any time.

use std::time::Duration;

use futures_util::future::{join, join3};
use retention_worker::{SeededJitter, ServeSummary, TermEnd, TermReport};
use tokio::time::sleep;

use crate::harness::{Event, Op, Outcome, World, config, fail};
use crate::history::{assert_deletes_use_latest_token, calls};

/// Runs replicas r1..r3 serving until `stop_at_ms`, then stops them all.
async fn three_replicas(world: &std::sync::Arc<World>, stop_at_ms: u64) -> Vec<ServeSummary> {
    let workers: Vec<_> = (1..=3)
        .map(|i| world.worker(&format!("r{i}"), config()))
        .collect();
    let serve = |i: usize| {
        let worker = workers[i].clone();
        async move {
            let mut jitter = SeededJitter::new(i as u64);
            worker.serve(&mut jitter, |_| {}).await.unwrap()
        }
    };
    let stop_all = async {
        sleep(Duration::from_millis(stop_at_ms)).await;
        join3(workers[0].stop(), workers[1].stop(), workers[2].stop()).await;
    };
    let (summaries, ()) = join(join3(serve(0), serve(1), serve(2)), stop_all).await;
    vec![summaries.0, summaries.1, summaries.2]
}

#[tokio::test(start_paused = true)]
async fn replicas_share_a_backlog_and_drain_it_over_several_terms() {
    let world = World::new(5_000, 400).with_latency(Op::Delete, 250);

    let summaries = three_replicas(&world, 120_000).await;

    let deleted: u64 = summaries.iter().map(|s| s.rows_deleted).sum();
    // The 400 recent rows age past the cutoff after 15 s, so all go.
    assert_eq!(deleted, 5_400);
    assert_eq!(world.rows_left(), 0);
    assert!(
        summaries.iter().map(|s| s.terms_led).sum::<u32>() >= 6,
        "{summaries:?}"
    );
    let log = world.log();
    for owner in ["r1", "r2", "r3"] {
        assert_deletes_use_latest_token(&log, owner);
    }
    assert_eq!(world.holder(), None, "stopped replicas released everything");
}

#[tokio::test(start_paused = true)]
async fn the_same_seeds_give_the_same_history() {
    let run = || async {
        let world = World::new(3_000, 100).with_latency(Op::Delete, 170);
        world.latency(Op::Renew, 30);
        world.script("r2", Op::Renew, 2, fail(Outcome::Null));
        three_replicas(&world, 90_000).await;
        world.log()
    };
    let first: Vec<Event> = run().await;
    let second: Vec<Event> = run().await;
    assert!(first.len() > 50);
    assert_eq!(first, second);
}

#[tokio::test(start_paused = true)]
async fn a_lost_term_backs_off_before_contending_again() {
    let world = World::new(5_000, 0).with_latency(Op::Delete, 400);
    world.script("r1", Op::Renew, 1, fail(Outcome::Null));
    let worker = world.worker("r1", config());
    let mut ends: Vec<TermEnd> = Vec::new();

    let serve = async {
        let mut jitter = SeededJitter::new(7);
        let record = |report: &TermReport| ends.push(report.end.clone());
        worker.serve(&mut jitter, record).await.unwrap()
    };
    let stop = async {
        sleep(Duration::from_millis(20_000)).await;
        worker.stop().await;
    };
    let (summary, ()) = join(serve, stop).await;

    let log = world.log();
    let acquires: Vec<i64> = calls(&log, "r1", Op::Acquire)
        .iter()
        .map(|e| e.at_ms)
        .collect();
    // The loss is noticed at 1000 ms and the term ends at 1200 ms; the next
    // acquire waits the 8 s backoff plus a jitter of at most 1 s.
    assert!((9_200..=10_200).contains(&acquires[1]), "{acquires:?}");
    assert!(matches!(ends[0], TermEnd::LeadershipLost(_)));
    assert_eq!(summary.terms_lost, 1);
    assert_eq!(summary.terms, ends.len() as u32);
}

#[tokio::test(start_paused = true)]
async fn stop_interrupts_the_pause_between_terms() {
    let world = World::new(100, 0);
    let worker = world.worker("r1", config());

    let serve = async {
        let mut jitter = SeededJitter::new(1);
        worker.serve(&mut jitter, |_| {}).await.unwrap()
    };
    let stop = async {
        sleep(Duration::from_millis(1_000)).await;
        worker.stop().await;
        world.now_ms()
    };
    let (summary, stopped_at) = join(serve, stop).await;

    assert_eq!(stopped_at, 1_000, "nothing was in flight");
    assert_eq!((summary.terms, summary.rows_deleted), (1, 100));
    assert!(
        worker
            .serve(&mut SeededJitter::new(1), |_| {})
            .await
            .is_err()
    );
}

#[test]
fn seeded_jitter_stays_in_range_and_repeats() {
    use retention_worker::Jitter;
    let draw = |seed| {
        let mut jitter = SeededJitter::new(seed);
        (0..1_000)
            .map(|_| jitter.jitter_ms(250))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(3), draw(3));
    assert_ne!(draw(3), draw(4));
    assert!(draw(3).iter().all(|&j| j <= 250));
    assert!(draw(3).contains(&0) && draw(3).contains(&250));
}

#[tokio::test(start_paused = true)]
async fn run_stop_and_serve_futures_are_send() {
    // Deployments spawn them on multi-threaded runtimes.
    fn assert_send<T: Send>(_: &T) {}
    let world = World::new(0, 0);
    let worker = world.worker("r1", config());
    let mut jitter = SeededJitter::new(0);
    assert_send(&worker.run());
    assert_send(&worker.stop());
    assert_send(&worker.serve(&mut jitter, |_| {}));
}
