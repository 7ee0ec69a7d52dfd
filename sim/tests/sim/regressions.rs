//! `sim/regressions/`: failures worth keeping, saved by `sim merge
//! --save-failures` (as proptest keeps `*.proptest-regressions`), and
//! `sim/findings/`: each review finding's plan for PostgreSQL. Each is
//! replayed in the simulator and must still do what its file expects: a
//! flaw's counterexample must still be caught, a fixed bug's plan must
//! still pass.

use std::path::Path;

use retention_sim::model::Flaw;
use retention_sim::report::scenario_files;
use retention_sim::{Scenario, Sim, check};

fn replay_folder(name: &str) -> Vec<Scenario> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let files = scenario_files(&dir).expect("the folder");
    assert!(!files.is_empty(), "{} holds no plan", dir.display());
    let mut scenarios = Vec::new();
    for file in files {
        let scenario = Scenario::load(&file).unwrap_or_else(|error| panic!("{error}"));
        let history = Sim::new(&scenario.run).run().unwrap();
        let verdict = check(&history);
        if let Err(problems) = scenario.judge(&verdict, &history.timeline()) {
            panic!("{}: not as kept:\n{problems}", file.display());
        }
        scenarios.push(scenario);
    }
    scenarios
}

#[test]
fn every_kept_failure_still_meets_its_expectation() {
    replay_folder("regressions");
}

/// The deterministic half of the PostgreSQL gate (`real::replay`): each of
/// the five findings has one plan, and in the simulator it breaks exactly
/// the one clause the gate looks for there, one the finding explains.
#[test]
fn each_review_finding_has_one_plan_that_breaks_its_clause_in_the_simulator() {
    let findings = [
        Flaw::OverlappingRenewals,
        Flaw::StaleRelease,
        Flaw::MovingCutoff,
        Flaw::UncappedTerm,
        Flaw::FlagOnlyStop,
    ];
    let scenarios = replay_folder("findings");
    let mut flaws: Vec<Flaw> = scenarios.iter().map(|s| s.run.flaw.unwrap()).collect();
    flaws.sort();
    assert_eq!(flaws, findings.to_vec(), "one plan per finding");
    for scenario in &scenarios {
        let flaw = scenario.run.flaw.unwrap();
        assert_eq!(scenario.name, flaw.name(), "named after its flaw");
        assert_eq!(scenario.expect.violates.len(), 1, "{}", scenario.name);
        let clause = scenario.expect.violates[0].as_str();
        assert!(
            flaw.clauses().contains(&clause),
            "{}: {clause}",
            scenario.name
        );
    }
}
