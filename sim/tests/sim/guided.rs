//! Guided exploration: a campaign is a function of its seed whatever the
//! threads, its failures replay from their tokens and load as a sweep's
//! summary, its corpus round-trips through its file, and the bench's
//! coverage comparison runs one campaign seed per comparison.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use retention_sim::model::{Flaw, RunSpec};
use retention_sim::report::parse_token;
use retention_sim::search::{
    ExploreConfig, ExploreSummary, GuidedBenchConfig, GuidedReport, Shard, bench_guided,
    corpus_text, guided_until, parse_corpus, violated_clause,
};
use retention_sim::sweep::{Summary, merge};

use crate::cli::{sim, sim_in};

fn campaign(runs: u64, start: u64, jobs: usize, flaw: Option<Flaw>, shard: Shard) -> ExploreConfig {
    ExploreConfig {
        seeds: runs,
        start,
        jobs,
        swarm: true,
        base: RunSpec::default(),
        replicas: None,
        flaw,
        shard,
        guided: true,
    }
}

fn run(config: &ExploreConfig, seeds: &[RunSpec]) -> (ExploreSummary, GuidedReport) {
    guided_until(config, seeds, &AtomicBool::new(false), |_| {})
}

#[test]
fn a_campaign_is_the_same_whatever_the_threads() {
    let one = run(
        &campaign(160, 7, 1, Some(Flaw::UncappedTerm), Shard::ALL),
        &[],
    );
    let two = run(
        &campaign(160, 7, 2, Some(Flaw::UncappedTerm), Shard::ALL),
        &[],
    );
    assert_eq!(one.0.failures, two.0.failures);
    assert_eq!(one.0.plans, two.0.plans);
    assert_eq!(one.0.coverage, two.0.coverage);
    assert_eq!(one.1.plans, two.1.plans);
    assert_eq!(
        (one.1.states, one.1.features),
        (two.1.states, two.1.features)
    );
    // It learnt something: plans beyond the first batch came from the
    // corpus, not only from the swarm.
    assert!(one.1.corpus_plans > 10, "{} plans kept", one.1.corpus_plans);
    let other = run(
        &campaign(160, 8, 1, Some(Flaw::UncappedTerm), Shard::ALL),
        &[],
    );
    assert_ne!(one.1.plans, other.1.plans, "another seed, another campaign");
}

#[test]
fn each_failure_replays_from_its_plan_and_loads_as_a_sweep() {
    let config = campaign(96, 3, 2, Some(Flaw::UncappedTerm), Shard::ALL);
    let (swept, _) = run(&config, &[]);
    assert!(swept.failed_runs > 0, "uncapped-term fails in a few runs");
    for failure in &swept.failures {
        let plan = swept.plan(&config, failure.seed);
        assert_eq!(plan.flaw, Some(Flaw::UncappedTerm));
        assert_eq!(violated_clause(&plan), Some(failure.clauses[0]));
    }
    let summary = Summary::of_sweep(&config, &swept, &BTreeMap::new(), 0, "test");
    assert!(summary.sweep.guided);
    let read = Summary::from_json(&summary.to_json()).expect("a guided summary loads");
    for (failure, read) in swept.failures.iter().zip(&read.failures) {
        let spec = parse_token(read.token.as_str()).expect("a token");
        assert_eq!(spec, swept.plan(&config, failure.seed));
    }
    // Two shards of a campaign merge like a sweep's.
    let halves: Vec<Summary> = ["1/2", "2/2"]
        .iter()
        .map(|shard| {
            let config = campaign(
                64,
                3,
                1,
                Some(Flaw::UncappedTerm),
                Shard::parse(shard).unwrap(),
            );
            let (swept, _) = run(&config, &[]);
            Summary::of_sweep(&config, &swept, &BTreeMap::new(), 0, "test")
        })
        .collect();
    let named = vec![
        (std::path::Path::new("a.json"), halves[0].clone()),
        (std::path::Path::new("b.json"), halves[1].clone()),
    ];
    let (merged, missing) = merge(named, "merge").expect("two guided shards merge");
    assert!(missing.is_empty());
    assert_eq!(merged.runs, 64);
    assert!(merged.sweep.guided);
}

#[test]
fn a_corpus_round_trips_and_a_bad_line_is_named() {
    let (_, report) = run(&campaign(64, 1, 2, None, Shard::ALL), &[]);
    let text = corpus_text(&report.plans);
    let read = parse_corpus(&text, "c.corpus", None).expect("a corpus reads back");
    assert_eq!(read, report.plans);
    // Read for a flaw, each plan runs it.
    let flawed = parse_corpus(&text, "c.corpus", Some(Flaw::MovingCutoff)).unwrap();
    assert!(
        flawed
            .iter()
            .all(|spec| spec.flaw == Some(Flaw::MovingCutoff))
    );
    let broken = format!(
        "{}\n\n{{\"seed\":1,\"replicas\":9}}\n",
        text.lines().next().unwrap()
    );
    let error = parse_corpus(&broken, "c.corpus", None).unwrap_err();
    assert!(error.starts_with("c.corpus:3: "), "{error}");
    assert!(error.contains("replicas"), "{error}");
    // A campaign started from a corpus keeps every plan of it.
    let (_, continued) = run(&campaign(32, 2, 1, None, Shard::ALL), &read);
    assert_eq!(continued.loaded_plans, read.len());
    assert!(continued.plans.len() >= read.len());
}

#[test]
fn explore_guided_saves_its_corpus_and_a_second_campaign_loads_it() {
    let dir = test_support::ScratchDir::new("sim-guided-");
    let corpus = dir.join("corpus");
    let corpus_arg = corpus.to_str().unwrap();
    let args = [
        "explore", "--guided", "--seeds", "64", "--quiet", "--corpus", corpus_arg,
    ];
    let (code, out, err) = sim_in(&dir, &args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("guided: corpus "), "{out}");
    let saved = corpus.join("0-1-of-1.corpus");
    let text = std::fs::read_to_string(&saved).expect("the corpus is saved");
    let plans = text.lines().count();
    assert!(plans > 0);
    let (code, out, err) = sim_in(&dir, &args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("({plans} loaded)")), "{out}");
    std::fs::write(corpus.join("bad.corpus"), "{\"seed\":1}\nnot json\n").unwrap();
    let (code, _, err) = sim_in(&dir, &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.corpus:2: replay token"), "{err}");
    let (code, _, err) = sim(&["explore", "--corpus", corpus_arg]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--guided"), "{err}");
}

#[test]
fn each_coverage_comparison_has_its_own_campaign_and_swarm_seeds() {
    let config = GuidedBenchConfig {
        streams: 1,
        budget_runs: 1,
        coverage_runs: 40,
        coverage_seeds: 2,
        canaries: vec![Flaw::canaries().next().expect("a canary")],
        swarm_streams: false,
        ..GuidedBenchConfig::default()
    };
    let report = bench_guided(&config, |_| {});
    assert_eq!(report.coverage.len(), 2, "one comparison per campaign seed");
    for (swarm, guided) in &report.coverage {
        assert_eq!(swarm.runs, 40);
        assert!(guided.runs > 0 && guided.cpu_secs > 0.0, "{guided:?}");
    }
    let (first, second) = (&report.coverage[0].0, &report.coverage[1].0);
    assert_ne!(
        (first.states, &first.probe_runs),
        (second.states, &second.probe_runs),
        "the second comparison's swarm runs seeds of its own"
    );
}
