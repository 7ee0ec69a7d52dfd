//! Coverage probes: a standard sweep must reach every probe, so that a
//! change that silently stops exercising a situation fails here, by name.

use retention_sim::checker::{PROBES, coverage};
use retention_sim::model::RunSpec;
use retention_sim::search::{ExploreConfig, explore};
use retention_sim::{Sim, check};

/// 600 swarm seeds reach all 55 probes on this tree.
#[test]
fn a_standard_sweep_reaches_every_probe() {
    let config = ExploreConfig {
        seeds: 600,
        start: 0,
        jobs: 2,
        swarm: true,
        base: RunSpec::default(),
        replicas: None,
        flaw: None,
        shard: retention_sim::search::Shard::ALL,
        guided: false,
    };
    let summary = explore(&config, |_| {});
    assert_eq!(summary.failed_runs, 0, "{:?}", summary.first_failure);
    assert!(PROBES.len() >= 25, "only {} probes", PROBES.len());
    let never: Vec<&str> = PROBES
        .iter()
        .map(|(probe, _)| *probe)
        .filter(|probe| summary.coverage.get(probe).copied().unwrap_or(0) == 0)
        .collect();
    assert!(
        never.is_empty(),
        "the standard sweep never reached: {never:?}"
    );
}

/// The probes count what the history shows: a fault-free run reaches the
/// plain ones and none of the fault ones.
#[test]
fn a_fault_free_run_reaches_only_the_plain_situations() {
    let spec = RunSpec {
        seed: 3,
        ..RunSpec::default()
    };
    let history = Sim::new(&spec).run().unwrap();
    assert!(check(&history).passed());
    let reached = coverage(&history);
    assert_eq!(reached.len(), PROBES.len(), "every probe is a key");
    for probe in [
        "acquire-granted",
        "renewal-granted",
        "term-capped",
        "release-cleared",
    ] {
        assert!(reached[probe] > 0, "{probe} not reached: {reached:?}");
    }
    for probe in [
        "crash-mid-delete",
        "corrupt-reply",
        "stop-during-delete",
        "loss-null-renewal",
    ] {
        assert_eq!(reached[probe], 0, "{probe} reached without its fault");
    }
}

/// Swarm draws each kind of clock fault in some runs and leaves it out of
/// others, so runs with and without it are both explored.
#[test]
fn swarm_draws_each_clock_fault_in_some_runs_only() {
    use retention_sim::model::FaultEvent;
    use retention_sim::search::swarm;
    const SEEDS: u64 = 100_000;
    let mut runs_with = [0_u64; 3];
    for seed in 0..SEEDS {
        let spec = swarm(seed, None);
        let kinds = [
            |e: &FaultEvent| matches!(e, FaultEvent::ClockStep { .. }),
            |e: &FaultEvent| matches!(e, FaultEvent::ClockRate { .. }),
            |e: &FaultEvent| matches!(e, FaultEvent::DbClockStep { .. }),
        ];
        for (count, kind) in runs_with.iter_mut().zip(kinds) {
            *count += u64::from(spec.events.iter().any(kind));
        }
    }
    println!(
        "of {SEEDS} swarm runs: {} step a replica's clock, {} re-rate one, {} step the database's",
        runs_with[0], runs_with[1], runs_with[2]
    );
    for (name, count) in ["clock_step", "clock_rate", "db_clock_step"]
        .iter()
        .zip(runs_with)
    {
        assert!(
            (SEEDS / 20..=SEEDS * 3 / 5).contains(&count),
            "{name} drawn in {count} of {SEEDS} runs"
        );
    }
}
