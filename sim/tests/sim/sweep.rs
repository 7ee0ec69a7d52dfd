//! The sweep layer as a library: shard summaries built from real sweeps,
//! read back, merged and triaged by function calls (the CLI tests in
//! `shards.rs` keep the command line's own behaviour).

use std::collections::BTreeMap;
use std::path::Path;

use retention_sim::model::{Flaw, RunSpec};
use retention_sim::search::{ExploreConfig, Shard, explore, shrink, spec_for};
use retention_sim::sweep::{Summary, merge, triage};

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
}
