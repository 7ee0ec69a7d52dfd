//! Coverage probes: a standard sweep must reach every probe, so that a
//! change that silently stops exercising a situation fails here, by name.

use retention_sim::checker::{PROBES, coverage};
use retention_sim::model::RunSpec;
use retention_sim::search::{ExploreConfig, explore};
use retention_sim::{Sim, check};

/// 600 swarm seeds reach all 47 probes on this tree.
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
        shard: (1, 1),
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
