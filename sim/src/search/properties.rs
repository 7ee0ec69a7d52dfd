//! The property suite as a library: strategies over fault plans, and a
//! search that runs any worker implementation through them, so that your
//! worker faces the same tests as ours.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{
    FileFailurePersistence, RngSeed, TestCaseError, TestError, TestRunner,
};

use super::swarm::strongest;
use crate::checker::{Verdict, check};
use crate::model::{
    CallOutcome, FaultConfig, FaultEvent, FaultKnob, Flaw, History, OpKind, RunSpec, SpecError,
    WorkerSpec,
};
use crate::report::format_failure;
use crate::subject::Sim;
use crate::world::WorkerFactory;

/// At least 1,000 cases by default; `PROPTEST_CASES` overrides. The
/// generator's seed is fixed so CI is repeatable; `PROPTEST_RNG_SEED` picks
/// another to explore further.
pub fn config(default_cases: u32) -> ProptestConfig {
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

/// Fault knobs, each off or at a random strength up to what the swarm
/// draws ([`FaultKnob::ALL`]'s order).
pub fn faults() -> impl Strategy<Value = FaultConfig> {
    let renew_interval_ms = WorkerSpec::default().renew_interval_ms;
    let knobs: Vec<BoxedStrategy<u64>> = FaultKnob::ALL
        .iter()
        .map(|&knob| prop_oneof![Just(0u64), 1..=strongest(knob, renew_interval_ms)].boxed())
        .collect();
    knobs.prop_map(|values| {
        let mut faults = FaultConfig::default();
        for (&knob, value) in FaultKnob::ALL.iter().zip(values) {
            faults
                .set(knob, value)
                .expect("drawn within the knob's limit");
        }
        faults
    })
}

fn outcome() -> impl Strategy<Value = CallOutcome> {
    prop_oneof![
        Just(CallOutcome::Normal),
        Just(CallOutcome::Reject),
        Just(CallOutcome::LoseReply),
        Just(CallOutcome::Revoke),
        Just(CallOutcome::Corrupt),
    ]
}

/// A timed event for replica 1..=5 at 0..30 s; [`spec`] folds both into
/// the run's replicas and duration, so shrinking never regenerates them.
pub fn event() -> impl Strategy<Value = FaultEvent> {
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
                    CallOutcome::Corrupt if !matches!(op, OpKind::Acquire | OpKind::Renew) => {
                        CallOutcome::Reject
                    }
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
        FaultEvent::HoldRows { at_ms, .. } => *at_ms %= duration_ms,
        FaultEvent::StopDuring { replica, .. } | FaultEvent::CallFault { replica, .. } => {
            *replica = (*replica - 1) % replicas + 1;
        }
    }
    event
}

/// Seed, replicas, duration, faults and timed events; shrinking drops
/// events, turns knobs off and shortens the run.
pub fn spec() -> impl Strategy<Value = RunSpec> {
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

/// The smallest failing plan a search found, after shrinking.
#[derive(Debug, Clone)]
pub struct Counterexample {
    /// The shrunk spec.
    pub spec: RunSpec,
    /// Its verdict.
    pub verdict: Verdict,
    /// The failure as the one formatter prints it.
    pub report: String,
}

/// How big a plan is: timed events plus fault knobs that are on.
pub fn plan_size(spec: &RunSpec) -> usize {
    let knobs_on = spec
        .faults
        .knobs()
        .into_iter()
        .filter(|(_, value)| *value > 0)
        .count();
    spec.events.len() + knobs_on
}

/// Runs `cases` generated plans (see [`spec`]) through the workers `factory`
/// builds and checks every clause; on a violation, shrinks the plan and
/// returns the smallest one found. (Its replay command runs the real worker:
/// a custom factory has no name the command line knows.)
pub fn search(factory: Arc<dyn WorkerFactory>, cases: u32) -> Result<(), Box<Counterexample>> {
    search_by(
        cases,
        |spec| spec,
        |spec| Sim::new(spec).factory(factory.clone()).run(),
    )
}

/// [`search`] for the real worker (`None`) or a flawed variant; the
/// counterexample's replay command reproduces it exactly.
pub fn search_flaw(flaw: Option<Flaw>, cases: u32) -> Result<(), Box<Counterexample>> {
    search_by(
        cases,
        |spec| RunSpec { flaw, ..spec },
        |spec| Sim::new(spec).run(),
    )
}

fn search_by(
    cases: u32,
    prepare: impl Fn(RunSpec) -> RunSpec,
    simulate: impl Fn(&RunSpec) -> Result<History, SpecError>,
) -> Result<(), Box<Counterexample>> {
    let mut runner = TestRunner::new(ProptestConfig {
        failure_persistence: None,
        ..config(cases)
    });
    let result = runner.run(&spec(), |spec| {
        let history = simulate(&prepare(spec)).expect("generated specs are valid");
        let verdict = check(&history);
        if verdict.passed() {
            Ok(())
        } else {
            Err(TestCaseError::fail("a clause was violated"))
        }
    });
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(_, spec)) => {
            let spec = prepare(spec);
            let history = simulate(&spec).expect("generated specs are valid");
            let verdict = check(&history);
            let report = format_failure(&spec, &history, &verdict);
            Err(Box::new(Counterexample {
                spec,
                verdict,
                report,
            }))
        }
        Err(TestError::Abort(reason)) => panic!("the property search aborted: {reason}"),
    }
}
