//! CUT-1 and CAP-1: one cutoff per term; at most 1,000 rows in batches of at
//! most 200 and the remaining allowance.

use retention_worker::TermEnd;

use crate::harness::{Op, World, config};
use crate::history::{delete_limits, deletes};

#[tokio::test(start_paused = true)]
async fn one_cutoff_serves_every_batch_of_a_long_term() {
    let world = World::new(3_000, 0).with_latency(Op::Delete, 900);
    let report = world.term("r1", config()).await;

    let sent: Vec<i64> = deletes(&world.log(), "r1")
        .iter()
        .map(|d| d.older_than_ms)
        .collect();
    assert_eq!(sent.len(), 5);
    assert!(world.now_ms() >= 4_500, "time moved on during the term");
    let cutoff = report.cutoff_ms.unwrap();
    assert_eq!(
        cutoff, -10_000,
        "CUT-1: captured right after the acquire at 0 ms"
    );
    assert!(sent.iter().all(|&c| c == cutoff), "CUT-1: {sent:?}");
}

#[tokio::test(start_paused = true)]
async fn a_backlog_is_capped_at_one_thousand_rows_in_five_batches() {
    let world = World::new(5_000, 0);
    let report = world.term("r1", config()).await;

    assert_eq!(report.end, TermEnd::Capped);
    assert_eq!((report.rows_deleted, report.batches), (1_000, 5));
    assert_eq!(delete_limits(&world.log(), "r1"), vec![200; 5]);
    assert_eq!(world.rows_left(), 4_000);
}

#[tokio::test(start_paused = true)]
async fn the_last_batch_asks_only_for_the_remaining_allowance() {
    let world = World::new(5_000, 0);
    let mut config = config();
    config.term_row_cap = 900;
    let report = world.term("r1", config).await;

    assert_eq!(
        delete_limits(&world.log(), "r1"),
        vec![200, 200, 200, 200, 100]
    );
    assert_eq!((report.end, report.rows_deleted), (TermEnd::Capped, 900));
}

#[tokio::test(start_paused = true)]
async fn the_first_short_batch_completes_the_term() {
    // Rows newer than the cutoff are never eligible: 437 old, 300 recent.
    let world = World::new(437, 300);
    let report = world.term("r1", config()).await;

    assert_eq!(report.end, TermEnd::Completed);
    assert_eq!((report.rows_deleted, report.batches), (437, 3));
    assert_eq!(
        world.rows_left(),
        300,
        "no row newer than the cutoff was deleted"
    );
}

#[tokio::test(start_paused = true)]
async fn an_empty_first_batch_completes_the_term() {
    let world = World::new(0, 50);
    let report = world.term("r1", config()).await;

    assert_eq!(
        (report.end, report.rows_deleted, report.batches),
        (TermEnd::Completed, 0, 1)
    );
}
