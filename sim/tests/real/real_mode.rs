//! Three worker replicas on tokio against PostgreSQL, under a plan drawn
//! from a seed: chosen calls refused, lost or revoked, a pause past the
//! TTL, a kill mid-term and a restart, `stop()` twice on one replica, a
//! replica's wall clock stepped ahead and back, the database's clock
//! stepped ahead, behind and back as at three failovers, a replica cut off from the
//! database; then a long quiet stretch for the backlog to drain. The run is
//! `retention_sim::real::run_plan`, as `sim replay --real` runs a
//! token: its history is judged by the simulator's checker, and the
//! database is asked for its own account (its audit of every delete, the
//! rows left). A failure prints the plan's replay token, with the commands
//! that run it again against PostgreSQL and in the simulator.
//!
//! The seed (`REAL_MODE_SEED`, default 1) fixes the plan; database and
//! network timing are real, so two runs of a seed differ in interleaving.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_sim::model::{
    CallOutcome, EventKind, FailureKind, FaultConfig, FaultEvent, History, OpKind, Outcome,
    RunSpec, WorkerSpec,
};
use retention_sim::real::RealServer;
use retention_sim::report::{format_failure, replay_token};
use retention_sim::{Sim, check};

/// The first 8 s hold every timed fault; the rest of the run is quiet.
const FAULTY_MS: u64 = 8_000;

/// The run for `seed`: short leases, terms and retention, so that a few
/// seconds see many terms, and every fault at an instant or call drawn
/// from the seed.
fn plan(seed: u64) -> RunSpec {
    let mut draw = ChaCha8Rng::seed_from_u64(seed);
    let mut pick = |range: std::ops::Range<u64>| draw.gen_range(range);
    let replica = |n: u64| u32::try_from(n % 3 + 1).expect("1..=3");
    let mut events = Vec::new();
    // Each replica meets a refused acquire, a lost delete reply, a revoked
    // renewal and a refused renewal among its first calls.
    for r in 1..=3 {
        for (op, nth, outcome) in [
            (OpKind::Acquire, 2, CallOutcome::Reject),
            (OpKind::Delete, 3, CallOutcome::LoseReply),
            (OpKind::Renew, 2, CallOutcome::Revoke),
            (OpKind::Renew, 4, CallOutcome::Reject),
        ] {
            events.push(FaultEvent::CallFault {
                replica: r,
                op,
                nth,
                outcome,
                request_delay_ms: 0,
                reply_delay_ms: 0,
            });
        }
    }
    let (paused, crashed, stepped, stopped, cut) = (
        replica(pick(0..3)),
        replica(pick(0..3)),
        replica(pick(0..3)),
        replica(pick(0..3)),
        replica(pick(0..3)),
    );
    let step_at_ms = pick(500..4_000);
    let db_step_at_ms = pick(1_000..4_000);
    let stop_at_ms = pick(2_000..6_000);
    let timed = [
        FaultEvent::Pause {
            replica: paused,
            at_ms: pick(500..4_000),
            for_ms: 2_200,
        },
        FaultEvent::Crash {
            replica: crashed,
            at_ms: pick(500..5_000),
            restart_after_ms: 800,
        },
        FaultEvent::ClockStep {
            replica: stepped,
            at_ms: step_at_ms,
            delta_ms: 1_200,
        },
        FaultEvent::ClockStep {
            replica: stepped,
            at_ms: step_at_ms + 1_500,
            delta_ms: -2_400,
        },
        FaultEvent::DbClockStep {
            at_ms: db_step_at_ms,
            delta_ms: 2_000,
        },
        FaultEvent::DbClockStep {
            at_ms: db_step_at_ms + 2_000,
            delta_ms: -4_000,
        },
        // And back to true time, so that the quiet stretch owes a drain
        // by true time (rows stamped 2 s behind would otherwise be owed
        // 2 s later than the others).
        FaultEvent::DbClockStep {
            at_ms: db_step_at_ms + 4_000,
            delta_ms: 2_000,
        },
        FaultEvent::Stop {
            replica: stopped,
            at_ms: stop_at_ms,
            callers: 2,
        },
        FaultEvent::Stop {
            replica: stopped,
            at_ms: stop_at_ms + 300,
            callers: 1,
        },
        FaultEvent::Partition {
            replica: cut,
            at_ms: pick(500..5_000),
            for_ms: 2_000,
        },
    ];
    let mut timed = timed.to_vec();
    timed.sort_by_key(|event| event.at_ms());
    events.extend(timed);
    RunSpec {
        seed,
        replicas: 3,
        duration_ms: FAULTY_MS + 20_000,
        backlog_rows: 6_000,
        boundary_rows: 300,
        arrivals_per_sec: 20,
        rpc_timeout_ms: 2_000,
        worker: WorkerSpec {
            retention_ms: 3_000,
            lease_ttl_ms: 1_500,
            renew_interval_ms: 150,
            expiry_margin_ms: 300,
            term_interval_ms: 150,
            loss_backoff_ms: 400,
            term_jitter_ms_max: 100,
            ..WorkerSpec::default()
        },
        faults: FaultConfig {
            latency_ms_max: 60,
            ..FaultConfig::default()
        },
        events,
        ..RunSpec::default()
    }
}

#[test]
fn three_replicas_on_postgresql_keep_every_clause_under_faults() {
    let _alone = crate::alone();
    let seed: u64 = std::env::var("REAL_MODE_SEED")
        .ok()
        .map_or(1, |s| s.parse().expect("REAL_MODE_SEED is a number"));
    let spec = plan(seed);
    spec.validate().expect("the test's plan is valid");
    // The same plan keeps every clause in the simulator, or the test's
    // plan is what is wrong.
    let simulated = Sim::new(&spec).run().expect("a valid plan");
    let verdict = check(&simulated);
    assert!(
        verdict.passed(),
        "{}",
        format_failure(&spec, &simulated, &verdict)
    );

    let server = RealServer::start();
    let real = server.run(&spec, "real_mode");
    let history = &real.history;
    let token = replay_token(&spec);
    let again = format!(
        "against PostgreSQL again: cargo run --release -p sim -- replay '{token}' --real\n\
         in the simulator: cargo run --release -p sim -- replay '{token}'"
    );
    // What `sim check` would refuse as damaged must not come from a real run.
    if let Err(problem) = History::from_jsonl(&history.to_jsonl()) {
        panic!("real mode, seed {seed}: the history is not valid: {problem}\n{again}");
    }
    let verdict = check(history);
    let picture = retention_sim::report::swimlanes(history, &verdict);
    if let Err(error) = roxmltree::Document::parse(&picture) {
        panic!("real mode, seed {seed}: the picture is not XML: {error}");
    }
    assert!(
        verdict.passed(),
        "real mode (against PostgreSQL): {}\n{again}",
        format_failure(&spec, history, &verdict)
    );
    // The database's own account: nothing deleted younger than the
    // retention by its own clock (DATA-4, asked of the database and not of
    // the history), and the backlog drained in the quiet stretch.
    assert_eq!(
        real.audit.early_by_database_clock, 0,
        "seed {seed}: rows deleted younger than the retention by the database's clock\n{again}"
    );
    let Some(EventKind::Final {
        stale_rows_left, ..
    }) = history.events.last().map(|e| &e.kind)
    else {
        panic!("the history ends with its final event");
    };
    assert_eq!(
        *stale_rows_left, 0,
        "seed {seed}: eligible rows left after the quiet stretch\n{again}"
    );
    let counts = summarise(history);
    let listed: Vec<String> = counts.iter().map(|(key, n)| format!("{key} {n}")).collect();
    println!(
        "real mode, seed {seed}: {}; checker: 0 violations over {} events; the database's \
         audit: {} rows deleted, 0 early by its own clock, {} early by true time; {} \
         effect(s) committed with no reply, recorded from the audits",
        listed.join(", "),
        history.events.len(),
        real.audit.deleted,
        real.audit.early_by_true_time,
        real.unheard_effects,
    );
    // A run that dodged the faults proves little: each must have happened.
    for fault in [
        "crashed",
        "paused",
        "cut off",
        "stop calls",
        "rejected",
        "ambiguous",
        "deletes",
        "grants",
        "clock steps",
        "database clock steps",
    ] {
        let happened = counts.get(fault).is_some_and(|n| *n > 0);
        assert!(
            happened,
            "seed {seed}: no {fault} in the run: {listed:?}\n{again}"
        );
    }
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
            EventKind::Partitioned { .. } => "cut off",
            EventKind::Crashed => "crashed",
            EventKind::ClockStepped { .. } => "clock steps",
            EventKind::DbClockStepped { .. } => "database clock steps",
            _ => continue,
        };
        *counts.entry(key).or_default() += 1;
    }
    counts
}
