//! Hints: what a sweep's failing runs share, ranked by the chance that a
//! run reaching it failed; they point at the condition a flaw needs, and
//! they refuse a sweep whose passing runs cannot be replayed.

use std::collections::BTreeMap;

use retention_sim::model::{Flaw, RunSpec};
use retention_sim::search::{ExploreConfig, Shard, explore, hints};
use retention_sim::sweep::Summary;

use crate::cli::sim;

fn sweep(flaw: Flaw, seeds: u64) -> Summary {
    let config = ExploreConfig {
        seeds,
        start: 0,
        jobs: 2,
        swarm: true,
        base: RunSpec::default(),
        replicas: None,
        flaw: Some(flaw),
        shard: Shard::ALL,
        guided: false,
    };
    let swept = explore(&config, |_| {});
    Summary::of_sweep(&config, &swept, &BTreeMap::new(), 0, "sim explore")
}

#[test]
fn the_hints_for_an_ignored_null_renewal_name_the_null_renewal() {
    let summary = sweep(Flaw::NullRenewalIgnored, 200);
    assert!(
        summary.failed_runs > 2,
        "{} failing runs",
        summary.failed_runs
    );
    let plans = summary.hint_plans().expect("a swarm sweep replays");
    assert_eq!(plans.passing_total, 200 - summary.failed_runs);
    assert_eq!(plans.passing.len() as u64, plans.passing_total);
    let found = hints(&plans.failing, &plans.passing, plans.passing_total, 12, 2);
    let ren3 = found
        .iter()
        .find(|clause| clause.clause == "REN-3")
        .expect("the flaw breaks REN-3");
    assert!(!ren3.hints.is_empty());
    for pair in ren3.hints.windows(2) {
        assert!(pair[0].fail_given_hit >= pair[1].fail_given_hit, "{pair:?}");
    }
    for hint in &ren3.hints {
        assert!(2 * hint.failing_runs >= ren3.failing_runs, "{hint:?}");
    }
    // The flaw ignores a null renewal: every failing run had one, and
    // the hints say so among their first few.
    assert!(
        ren3.hints
            .iter()
            .take(5)
            .any(|hint| hint.condition.contains("null")),
        "{:#?}",
        ren3.hints
    );
    // A condition no passing run of the control reached is as telling as
    // a hint can be.
    for hint in ren3.hints.iter().filter(|hint| hint.passing_runs == 0) {
        assert!((hint.fail_given_hit - 1.0).abs() < 1e-9, "{hint:?}");
    }
}

#[test]
fn hints_refuse_a_guided_campaign_and_explain_a_clean_sweep() {
    let mut summary = sweep(Flaw::NullRenewalIgnored, 40);
    summary.sweep.guided = true;
    let refused = summary.hint_plans().err().expect("a guided campaign");
    assert!(refused.contains("guided"), "{refused}");

    let (code, out, err) = sim(&["explore", "--swarm", "--seeds", "20", "--hints", "-q"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("no run failed"), "{out}");

    let (code, out, err) = sim(&[
        "explore",
        "--swarm",
        "--flaw",
        "null-renewal-ignored",
        "--seeds",
        "60",
        "--jobs",
        "2",
        "--hints",
        "-q",
    ]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("hints for REN-3"), "{out}");
    assert!(out.contains("P(fail|reached)"), "{out}");
}
