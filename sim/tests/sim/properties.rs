//! Property tests: under any generated fault plan, the real worker keeps
//! every clause. A failure prints through the one failure formatter.

use proptest::prelude::*;
use retention_sim::report::{parse_token, replay_token};
use retention_sim::search::properties::{config, plan_size, search_flaw, spec};
use retention_sim::search::{SHRINK_RUNS, shrink_while};
use retention_sim::{RunSpec, Sim};

/// 1,000 generated plans (settings, faults, events); a failure is printed
/// shrunk, through the one formatter, with its replay command.
#[test]
fn the_worker_keeps_every_clause_under_any_fault_plan() {
    if let Err(counterexample) = search_flaw(None, 1_000) {
        panic!("{}", counterexample.report);
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
    let loses_a_term = |spec: &RunSpec| {
        let history = Sim::new(spec).run().expect("generated specs are valid");
        history.events.iter().any(|e| match &e.kind {
            retention_sim::model::EventKind::TermEnded { end, .. } => end.lost_leadership(),
            _ => false,
        })
    };
    let result = runner.run(&spec(), |spec| {
        if loses_a_term(&spec) {
            Err(TestCaseError::fail("a term lost leadership"))
        } else {
            Ok(())
        }
    });
    let Err(TestError::Fail(_, shrunk_by_proptest)) = result else {
        panic!("500 generated plans never cost a term its lease: the generator lost its teeth");
    };
    // proptest shrinks each part on its own; the harness's shrinker then
    // works across parts, as every printed failure is shrunk.
    let (minimal, _) = shrink_while(&shrunk_by_proptest, SHRINK_RUNS, loses_a_term);
    println!(
        "shrunk from size {} to {} ({} event(s)): {}",
        plan_size(&shrunk_by_proptest),
        plan_size(&minimal),
        minimal.events.len(),
        replay_token(&minimal)
    );
    assert!(
        minimal.events.len() <= 2 && plan_size(&minimal) <= 4,
        "not small: {}",
        replay_token(&minimal)
    );
}
