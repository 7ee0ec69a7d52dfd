//! Property tests: under any generated fault plan, the real worker keeps
//! every clause. A failure prints through the one failure formatter.

use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use retention_sim::{
    CallOutcome, FaultConfig, FaultEvent, OpKind, RunSpec, check, format_failure, parse_token,
    replay_token, run,
};

/// At least 1,000 cases by default; `PROPTEST_CASES` overrides. The
/// generator's seed is fixed so CI is repeatable; `PROPTEST_RNG_SEED` picks
/// another to explore further.
fn config(default_cases: u32) -> ProptestConfig {
    let defaults = ProptestConfig::default();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    let seeded = std::env::var_os("PROPTEST_RNG_SEED").is_some();
    ProptestConfig {
        cases: cases.unwrap_or(default_cases),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        rng_seed: if seeded {
            defaults.rng_seed
        } else {
            RngSeed::Fixed(0x5EED)
        },
        ..defaults
    }
}

fn faults() -> impl Strategy<Value = FaultConfig> {
    let knob = |max: u64| prop_oneof![Just(0u64), 1..=max];
    let permille = |value: u64| u32::try_from(value).expect("below 1000");
    let knobs = (
        knob(400),
        knob(300),
        knob(100),
        knob(100),
        knob(100),
        knob(50),
        knob(1_000),
    );
    knobs.prop_map(
        move |(latency, late, reject, ambiguous, null, loss, skew)| FaultConfig {
            latency_ms_max: latency,
            renew_reply_delay_permille: permille(late),
            reject_permille: permille(reject),
            ambiguous_permille: permille(ambiguous),
            null_renew_permille: permille(null),
            packet_loss_permille: permille(loss),
            clock_skew_ms_max: skew,
        },
    )
}

fn outcome() -> impl Strategy<Value = CallOutcome> {
    prop_oneof![
        Just(CallOutcome::Normal),
        Just(CallOutcome::Reject),
        Just(CallOutcome::LoseReply),
        Just(CallOutcome::Revoke),
    ]
}

/// A timed event for replica 1..=5 at 0..30 s; [`spec`] folds both into
/// the run's replicas and duration, so shrinking never regenerates them.
fn event() -> impl Strategy<Value = FaultEvent> {
    let replica = 1..=5u32;
    let at = 0..30_000u64;
    let op = prop_oneof![
        Just(OpKind::Acquire),
        Just(OpKind::Renew),
        Just(OpKind::Delete),
        Just(OpKind::Release)
    ];
    prop_oneof![
        (replica.clone(), at.clone(), 100..10_000u64).prop_map(|(replica, at_ms, for_ms)| {
            FaultEvent::Pause {
                replica,
                at_ms,
                for_ms,
            }
        }),
        (replica.clone(), at.clone(), 0..6_000u64).prop_map(
            |(replica, at_ms, restart_after_ms)| {
                FaultEvent::Crash {
                    replica,
                    at_ms,
                    restart_after_ms,
                }
            }
        ),
        (replica.clone(), at, 1..=3u32).prop_map(|(replica, at_ms, callers)| FaultEvent::Stop {
            replica,
            at_ms,
            callers
        }),
        (replica.clone(), op.clone(), 1..=6u32, 1..=3u32).prop_map(
            |(replica, op, nth, callers)| {
                FaultEvent::StopDuring {
                    replica,
                    op,
                    nth,
                    callers,
                }
            }
        ),
        (replica, op, 1..=6u32, outcome(), 0..3_000u64, 0..3_000u64).prop_map(
            |(replica, op, nth, outcome, request_delay_ms, reply_delay_ms)| {
                // A revoke only means something for a renewal.
                let outcome = match outcome {
                    CallOutcome::Revoke if op != OpKind::Renew => CallOutcome::Reject,
                    other => other,
                };
                FaultEvent::CallFault {
                    replica,
                    op,
                    nth,
                    outcome,
                    request_delay_ms,
                    reply_delay_ms,
                }
            }
        ),
    ]
}

fn fold(mut event: FaultEvent, replicas: u32, duration_ms: u64) -> FaultEvent {
    match &mut event {
        FaultEvent::Pause { replica, at_ms, .. }
        | FaultEvent::Crash { replica, at_ms, .. }
        | FaultEvent::Stop { replica, at_ms, .. } => {
            *replica = (*replica - 1) % replicas + 1;
            *at_ms %= duration_ms;
        }
        FaultEvent::StopDuring { replica, .. } | FaultEvent::CallFault { replica, .. } => {
            *replica = (*replica - 1) % replicas + 1;
        }
    }
    event
}

/// Seed, replicas, duration, faults and timed events; shrinking drops
/// events, turns knobs off and shortens the run.
fn spec() -> impl Strategy<Value = RunSpec> {
    let events = prop::collection::vec(event(), 0..4);
    (any::<u64>(), 1..=5u32, 5_000..=30_000u64, faults(), events).prop_map(
        |(seed, replicas, duration_ms, faults, events)| RunSpec {
            seed,
            replicas,
            duration_ms,
            backlog_rows: 2_000,
            faults,
            events: events
                .into_iter()
                .map(|e| fold(e, replicas, duration_ms))
                .collect(),
            ..RunSpec::default()
        },
    )
}

proptest! {
    #![proptest_config(config(1_000))]

    #[test]
    fn the_worker_keeps_every_clause_under_any_fault_plan(spec in spec()) {
        let history = run(&spec).expect("generated specs are valid");
        let verdict = check(&history);
        prop_assert!(verdict.passed(), "{}", format_failure(&spec, &history, &verdict));
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn any_spec_survives_its_replay_token(spec in spec()) {
        prop_assert_eq!(parse_token(&replay_token(&spec)).unwrap(), spec);
    }
}

/// Shrinking works through fresh madsim runtimes and reaches a small plan:
/// a property that any lost leadership breaks (many faults cause one)
/// shrinks to a plan with at most two timed events and three fault knobs on
/// (0 and 2 with the fixed generator seed; at most 2 and 3 over ten others).
#[test]
fn shrinking_reaches_a_small_plan() {
    use proptest::test_runner::{TestCaseError, TestError, TestRunner};
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 500,
        failure_persistence: None,
        ..config(500)
    });
    let result = runner.run(&spec(), |spec| {
        let history = run(&spec).expect("generated specs are valid");
        let lost = history.events.iter().any(|e| match &e.kind {
            retention_sim::EventKind::TermEnded { end, .. } => end.starts_with("LeadershipLost"),
            _ => false,
        });
        if lost {
            Err(TestCaseError::fail("a term lost leadership"))
        } else {
            Ok(())
        }
    });
    let Err(TestError::Fail(_, minimal)) = result else {
        panic!("500 generated plans never cost a term its lease: the generator lost its teeth");
    };
    let f = &minimal.faults;
    let knobs_on = [
        f.latency_ms_max,
        u64::from(f.renew_reply_delay_permille),
        u64::from(f.reject_permille),
        u64::from(f.ambiguous_permille),
        u64::from(f.null_renew_permille),
        u64::from(f.packet_loss_permille),
        f.clock_skew_ms_max,
    ]
    .iter()
    .filter(|&&knob| knob > 0)
    .count();
    println!(
        "shrunk to {} event(s), {knobs_on} knob(s): {}",
        minimal.events.len(),
        replay_token(&minimal)
    );
    assert!(
        minimal.events.len() <= 2 && knobs_on <= 3,
        "not small: {}",
        replay_token(&minimal)
    );
}
