//! The sweep layer as a library: shard summaries built from real sweeps,
//! read back, merged and triaged by function calls (the CLI tests in
//! `shards.rs` keep the command line's own behaviour).

use std::collections::BTreeMap;
use std::path::Path;

use retention_sim::model::{Flaw, RunSpec};
use retention_sim::search::{ExploreConfig, Shard, explore, shrink, spec_for};
use retention_sim::sweep::{Summary, clean_runs_needed, findability, merge, triage};

const SEEDS: u64 = 24;

/// One shard of a swarm sweep of the uncapped-term variant (it fails on
/// most seeds), its first two failures shrunk.
fn shard_summary(shard: Shard) -> Summary {
    let config = ExploreConfig {
        seeds: SEEDS,
        start: 100,
        jobs: 1,
        swarm: true,
        base: RunSpec::default(),
        replicas: None,
        flaw: Some(Flaw::UncappedTerm),
        shard,
        guided: false,
    };
    let swept = explore(&config, |_| {});
    let shrunk: BTreeMap<_, _> = swept
        .failures
        .iter()
        .take(2)
        .map(|failure| {
            let spec = spec_for(&config, failure.seed);
            (failure.seed, shrink(&spec, failure.clauses[0], 40))
        })
        .collect();
    let summary = Summary::of_sweep(&config, &swept, &shrunk, 2, "test");
    // What a shard writes is what the merge reads (its sums of seconds
    // may lose their last digit in JSON).
    let read = Summary::from_json(&summary.to_json()).expect("a summary reads back");
    assert_eq!(
        (&read.sweep, &read.shards, read.runs, &read.failures),
        (
            &summary.sweep,
            &summary.shards,
            summary.runs,
            &summary.failures
        )
    );
    assert_eq!(read.violations_by_clause, summary.violations_by_clause);
    summary
}

fn named(summaries: &[Summary]) -> Vec<(&Path, Summary)> {
    summaries
        .iter()
        .enumerate()
        .map(|(at, summary)| {
            let path = if at == 0 { "a.json" } else { "b.json" };
            (Path::new(path), summary.clone())
        })
        .collect()
}

#[test]
fn two_shards_merge_into_the_whole_sweep() {
    let whole = shard_summary(Shard::ALL);
    let halves = [
        shard_summary(Shard::parse("1/2").unwrap()),
        shard_summary(Shard::parse("2/2").unwrap()),
    ];
    let (merged, missing) = merge(named(&halves), "merge").expect("two halves merge");
    assert!(missing.is_empty());
    assert_eq!(merged.runs, SEEDS);
    assert_eq!(merged.runs, whole.runs);
    assert_eq!(merged.failed_runs, whole.failed_runs);
    assert_eq!(merged.violations_by_clause, whole.violations_by_clause);
    assert_eq!(merged.coverage, whole.coverage);
    let seeds = |s: &Summary| s.failures.iter().map(|f| f.seed).collect::<Vec<_>>();
    assert_eq!(seeds(&merged), seeds(&whole));
    assert!(merged.failed_runs > 0, "the variant fails some seed");
    assert!(!merged.partial);
}

#[test]
fn a_merge_names_a_missing_shard_and_refuses_one_held_twice() {
    let first = shard_summary(Shard::parse("1/3").unwrap());
    let (merged, missing) = merge(named(std::slice::from_ref(&first)), "merge").unwrap();
    assert_eq!(missing, [2..=3]);
    assert_eq!(merged.runs, Shard::parse("1/3").unwrap().seeds_in(SEEDS));
    let twice = merge(named(&[first.clone(), first]), "merge").unwrap_err();
    assert!(
        twice.contains("shard 1/3 is in both a.json and b.json"),
        "{twice}"
    );
}

#[test]
fn triage_keys_failures_by_shrunk_plan_not_by_seed() {
    let now = shard_summary(Shard::ALL);
    let same = triage(&now, &now);
    assert!(!same.any_new());
    assert!(same.fixed.is_empty());
    assert!(!same.still_failing.is_empty());
    assert_eq!(same.caveat, None);
    let mut clean = now.clone();
    clean.failures.clear();
    clean.failed_runs = 0;
    clean.violations = 0;
    clean.violations_by_clause.clear();
    let against_clean = triage(&now, &clean);
    assert!(against_clean.any_new());
    assert_eq!(against_clean.new, same.still_failing);
    let fixed = triage(&clean, &now);
    assert_eq!(fixed.fixed, same.still_failing);
    assert!(!fixed.any_new());
    // The baseline drew CAP-1 in most of its 24 runs: a handful of clean
    // runs is evidence enough, and the triage says so for each fix.
    let rates = findability(&now).expect("a swarm sweep gives rates");
    let cap = &rates["CAP-1"];
    assert_eq!(cap.runs, SEEDS);
    assert_eq!(cap.clean_runs_needed, clean_runs_needed(cap.rate));
    assert_eq!(fixed.fixed_credible.len(), fixed.fixed.len());
    for credible in &fixed.fixed_credible {
        let credible = credible.expect("the baseline gives a rate");
        assert_eq!(credible.runs, SEEDS);
        assert_eq!(credible.enough, SEEDS >= credible.clean_runs_needed);
    }
    // Had this sweep run fewer runs than the rate asks, the fix would not
    // yet be credible.
    let mut short = clean.clone();
    short.runs = 1;
    let early = triage(&short, &now);
    assert!(early.fixed_credible.iter().all(|c| !c.unwrap().enough));
}

#[test]
fn the_clean_runs_a_fix_needs_follow_from_its_rate() {
    // (1 - p)^n <= 0.05 at the smallest n.
    assert_eq!(clean_runs_needed(0.01), 299);
    assert_eq!(clean_runs_needed(0.5), 5);
    assert_eq!(clean_runs_needed(1e-4), 29_956);
    assert_eq!(clean_runs_needed(1.0), 1);
    assert_eq!(clean_runs_needed(0.0), u64::MAX);
    for p in [0.3, 0.01, 1e-3, 1e-5] {
        let n = clean_runs_needed(p);
        assert!((1.0 - p).powf(n as f64) <= 0.05 + 1e-12, "{p}");
        assert!((1.0 - p).powf((n - 1) as f64) > 0.05, "{p}");
    }
}
