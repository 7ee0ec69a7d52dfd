//! Three worker replicas on tokio against PostgreSQL, with faults injected
//! around the production adapters (latency, rejected calls, lost replies,
//! revoked leases, late renewal replies, a pause past the TTL, a kill
//! mid-term, `stop()` at random instants, a replica's wall clock stepped
//! ahead and back, the database's clock stepped ahead and back as at two
//! failovers), recorded in the simulator's history format and judged by the
//! simulator's checker. Then the database itself is asked: nothing newer
//! than a cutoff went, everything eligible did once the run drained, and
//! its audit of every delete holds no row younger than the retention by
//! its own clock.
//!
//! The seed (`REAL_MODE_SEED`, default 1) fixes the fault draws and the
//! schedule of pauses, kills and stops; database and network timing are
//! real, so two runs of a seed differ in interleaving. A failure prints the
//! seed, the violations with a timeline excerpt, and where the history was
//! saved.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use retention_sim::check;
use retention_sim::model::{EventKind, FailureKind, History, Outcome};
use retention_sim::report::excerpt;

use crate::world::{FAULTY_MS, REPLICAS, Run, insert_arrivals};
use test_support::TempServer;

#[test]
fn three_replicas_on_postgresql_keep_every_clause_under_faults() {
    let seed: u64 = std::env::var("REAL_MODE_SEED")
        .ok()
        .map_or(1, |s| s.parse().expect("REAL_MODE_SEED is a number"));
    let server = TempServer::start();
    // One thread, as in the simulator: a task runs undisturbed between its
    // awaits, so what a worker decides and what the log records about it
    // (a stop flag and the `StopCalled` event, a check of that flag and the
    // next call's invoke) are one step. With worker threads another task
    // could slip between the two, and the history would show an order that
    // never happened. The database, a separate process, stays as concurrent
    // as ever.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let mut plan = ChaCha8Rng::seed_from_u64(seed);
        let run = Run::start(&server, seed, &mut plan).await;
        let arrivals_done = Arc::new(AtomicBool::new(false));
        let inserter = tokio::spawn(insert_arrivals(
            run.pool.clone(),
            run.log.clone(),
            arrivals_done.clone(),
        ));
        let schedule = run.schedule_faults(&mut plan);
        tokio::time::sleep(Duration::from_millis(FAULTY_MS)).await;
        for task in schedule {
            task.await.expect("a fault task panicked");
        }
        arrivals_done.store(true, Ordering::SeqCst);
        let arrived = inserter.await.expect("the inserter panicked");
        run.shared.faults_on.store(false, Ordering::SeqCst);

        run.check_newer_rows_kept(&arrived).await;
        run.drain().await;
        for replica in &run.replicas {
            let _alone = replica.lifecycle.lock().await;
            replica.stop(1).await;
        }
        run.shared.in_flight.drained().await;
        let tally = run.finish(&arrived).await;
        let history = &tally.history;

        judge(history, seed);
        // The database's own account of the drain.
        assert_eq!(
            tally.stale_rows_left, 0,
            "eligible rows left after the drain"
        );
        assert_eq!(
            tally.rows_left, 0,
            "every row written was older than the last completed cutoff"
        );
        // And of every row it deleted, each judged by the database's own
        // clock as it went (DATA-4, asked of the database and not of the
        // history).
        let audit = &tally.audit;
        assert_eq!(
            audit.early_by_database_clock, 0,
            "seed {seed}: rows deleted younger than the retention by the database's clock"
        );
        assert_eq!(audit.deleted, run.initial_rows + arrived.len() as u64);
        let counts = summarise(history);
        let listed: Vec<String> = counts.iter().map(|(key, n)| format!("{key} {n}")).collect();
        println!(
            "real mode, seed {seed}: {REPLICAS} replicas, {} rows at the start + {} arrivals; {}; \
             checker: 0 violations over {} events; the database's audit: {} rows deleted, \
             0 early by its own clock, {} early by true time",
            run.initial_rows,
            arrived.len(),
            listed.join(", "),
            history.events.len(),
            audit.deleted,
            audit.early_by_true_time,
        );
        // A run that dodged the faults proves little: each must have happened.
        for fault in [
            "crashed",
            "paused",
            "stop calls",
            "rejected",
            "ambiguous",
            "deletes",
            "grants",
            "clock steps",
            "database clock steps",
        ] {
            let happened = counts.get(fault).is_some_and(|n| *n > 0);
            assert!(happened, "seed {seed}: no {fault} in the run: {listed:?}");
        }
    });
}

/// The checker's verdict; on a violation, saves the history and fails with
/// each violation's timeline excerpt.
fn judge(history: &History, seed: u64) {
    // What `sim check` would refuse as damaged must not come from a real run.
    if let Err(problem) = History::from_jsonl(&history.to_jsonl()) {
        panic!("real mode, seed {seed}: the history is not valid: {problem}");
    }
    let verdict = check(history);
    // A real run's history draws as any other (a reviewer's picture of it).
    let picture = retention_sim::report::swimlanes(history, &verdict);
    if let Err(error) = roxmltree::Document::parse(&picture) {
        panic!("real mode, seed {seed}: the picture is not XML: {error}");
    }
    let saved = std::env::temp_dir().join(format!("real-mode-seed-{seed}.jsonl"));
    std::fs::write(&saved, history.to_jsonl()).expect("save the history");
    let mut failure = String::new();
    for violation in &verdict.violations {
        failure.push_str(&format!(
            "{violation}\n{}\n",
            excerpt(history, &violation.events)
        ));
    }
    assert!(
        verdict.passed(),
        "real mode, seed {seed} (rerun: REAL_MODE_SEED={seed} cargo test -p sim --test real real_mode), \
         history in {} (`sim check` it):\n{failure}",
        saved.display()
    );
}

/// Counts of what the run went through, so a run that dodged every fault
/// cannot pass unnoticed.
fn summarise(history: &History) -> std::collections::BTreeMap<&'static str, u64> {
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for event in &history.events {
        let key = match &event.kind {
            EventKind::Granted { .. } => "grants",
            EventKind::Deleted { rows, .. } => {
                *counts.entry("rows deleted").or_default() += rows.len() as u64;
                "deletes"
            }
            EventKind::Fenced { .. } => "fenced",
            EventKind::Revoked { .. } => "revoked",
            EventKind::Return {
                outcome: Outcome::Failed { kind, .. },
                ..
            } if *kind == FailureKind::Rejected => "rejected",
            EventKind::Return {
                outcome: Outcome::Failed { kind, .. },
                ..
            } if *kind == FailureKind::Ambiguous => "ambiguous",
            EventKind::TermEnded { end, .. } if end.lost_leadership() => "terms lost",
            EventKind::TermEnded { .. } => "terms",
            EventKind::StopCalled { .. } => "stop calls",
            EventKind::Paused { .. } => "paused",
            EventKind::Crashed => "crashed",
            EventKind::ClockStepped { .. } => "clock steps",
            EventKind::DbClockStepped { .. } => "database clock steps",
            _ => continue,
        };
        *counts.entry(key).or_default() += 1;
    }
    counts
}
