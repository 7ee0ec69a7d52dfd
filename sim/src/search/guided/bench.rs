//! `sim bench --guided`: what learning buys. For each rare-bug canary, the
//! runs and CPU seconds to first detection over independent streams,
//! plain swarm against a guided campaign; and, at equal CPU time, how
//! often each mode reaches each coverage probe and how many abstract
//! states it reaches.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde::Serialize;

use super::signature::{Feature, feedback, is_state};
use super::{GuidedReport, guided_until};
use crate::checker::{PROBES, check, coverage};
use crate::model::{Flaw, RunSpec};
use crate::search::explore::ExploreConfig;
use crate::search::shard::Shard;
use crate::search::swarm::swarm;
use crate::subject::Sim;

/// How much `bench_guided` measures.
#[derive(Debug, Clone)]
pub struct GuidedBenchConfig {
    /// Independent streams per canary and mode. Default 5.
    pub streams: u64,
    /// Runs a stream may spend before it counts as found at the budget.
    /// Default 100,000: well past swarm's expected detection on every
    /// canary (10,000 to 40,000 runs), so a miss rarely hides its cost.
    pub budget_runs: u64,
    /// Swarm runs of the coverage comparison; guided gets the CPU time
    /// they took; 0 leaves the comparison out. Default 10,000.
    pub coverage_runs: u64,
    /// Coverage comparisons, each a guided campaign of its own seed (0,
    /// 1, ...) against swarm runs of their own. Default 3: one campaign's
    /// figures move by up to 1.3x in states and 2x in a rare probe from
    /// one seed to the next, so a single one can mislead.
    pub coverage_seeds: u64,
    /// Streams run side by side (each on one thread). Default 2.
    pub jobs: usize,
    /// Only these canaries; empty for all.
    pub canaries: Vec<Flaw>,
    /// Measure swarm's streams too. Default on; off re-measures only the
    /// search after a change to it (swarm's streams do not change).
    pub swarm_streams: bool,
}

impl Default for GuidedBenchConfig {
    fn default() -> Self {
        Self {
            streams: 5,
            budget_runs: 100_000,
            coverage_runs: 10_000,
            coverage_seeds: 3,
            jobs: 2,
            canaries: Vec::new(),
            swarm_streams: true,
        }
    }
}

/// One mode's streams on one canary.
#[derive(Debug, Clone, Serialize)]
pub struct Streams {
    /// Runs to first detection, per stream; the budget where it missed.
    pub runs: Vec<u64>,
    /// CPU seconds to first detection (or to the budget), per stream.
    pub cpu_secs: Vec<f64>,
    /// Streams that spent the budget without a detection.
    pub misses: u64,
    /// Median of `runs` (a miss counts as the budget).
    pub median_runs: u64,
    /// Median of `cpu_secs`.
    pub median_cpu_secs: f64,
}

/// One mode's reach at a CPU budget.
#[derive(Debug, Clone, Serialize)]
pub struct Reach {
    /// Runs made.
    pub runs: u64,
    /// CPU seconds they took.
    pub cpu_secs: f64,
    /// Runs that reached each probe.
    pub probe_runs: BTreeMap<&'static str, u64>,
    /// Distinct abstract states reached.
    pub states: usize,
}

/// Everything `bench_guided` reports.
#[derive(Debug, Clone, Serialize)]
pub struct GuidedBench {
    /// Runs per stream before a miss.
    pub budget_runs: u64,
    /// Per canary: its clauses, then swarm's streams (unless not asked
    /// for) and guided's.
    pub canaries: BTreeMap<&'static str, (Vec<&'static str>, Option<Streams>, Streams)>,
    /// Per campaign seed (0, 1, ...): swarm's reach over `coverage_runs`
    /// runs of seeds of its own (seed k: from k x `coverage_runs`), then a
    /// guided campaign's in the same CPU time. Empty when `coverage_runs`
    /// is 0.
    pub coverage: Vec<(Reach, Reach)>,
}

/// CPU time this thread has run, in seconds (Linux's schedstat).
pub fn thread_cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(f64::NAN, |ns| ns as f64 / 1e9)
}

/// Runs the comparison; `progress` hears what is being measured.
pub fn bench_guided(config: &GuidedBenchConfig, progress: impl Fn(&str) + Sync) -> GuidedBench {
    let canaries: Vec<Flaw> = if config.canaries.is_empty() {
        Flaw::canaries().collect()
    } else {
        config.canaries.clone()
    };
    let mut tasks = Vec::new();
    for &flaw in &canaries {
        for guided in [false, true] {
            if !guided && !config.swarm_streams {
                continue;
            }
            for stream in 0..config.streams {
                tasks.push(Task::Canary(flaw, guided, stream));
            }
        }
    }
    if config.coverage_runs > 0 {
        tasks.extend((0..config.coverage_seeds).map(Task::Coverage));
    }
    let results = Mutex::new(BTreeMap::new());
    let reaches = Mutex::new(BTreeMap::new());
    let next = AtomicUsize::new(0);
    let work = || {
        while let Some(&task) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
            match task {
                Task::Canary(flaw, guided, stream) => {
                    let first = stream.wrapping_mul(1_000_003).wrapping_add(17);
                    let found = if guided {
                        guided_detection(flaw, first, config.budget_runs)
                    } else {
                        swarm_detection(flaw, first, config.budget_runs)
                    };
                    progress(&format!(
                        "{flaw} {} stream {stream}: {} runs",
                        if guided { "guided" } else { "swarm" },
                        found.0
                    ));
                    results
                        .lock()
                        .expect("no panic while measuring")
                        .insert((flaw, guided, stream), found);
                }
                Task::Coverage(seed) => {
                    let first = seed.wrapping_mul(config.coverage_runs);
                    let swarm = swarm_reach(first, config.coverage_runs);
                    let guided = guided_reach(seed, swarm.cpu_secs);
                    progress(&format!(
                        "coverage at equal CPU time, campaign seed {seed}: {} abstract states against swarm's {}",
                        guided.states, swarm.states
                    ));
                    reaches
                        .lock()
                        .expect("no panic while measuring")
                        .insert(seed, (swarm, guided));
                }
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..config.jobs.max(1) {
            scope.spawn(work);
        }
    });
    let results = results.into_inner().expect("no panic while measuring");
    let streams = |flaw: Flaw, guided: bool| {
        let found: Vec<(u64, f64)> = (0..config.streams)
            .map(|stream| results[&(flaw, guided, stream)])
            .collect();
        summarise(&found, config.budget_runs)
    };
    let canaries = canaries
        .iter()
        .map(|&flaw| {
            (
                flaw.name(),
                (
                    flaw.clauses().to_vec(),
                    config.swarm_streams.then(|| streams(flaw, false)),
                    streams(flaw, true),
                ),
            )
        })
        .collect();
    let coverage = reaches
        .into_inner()
        .expect("no panic while measuring")
        .into_values()
        .collect();
    GuidedBench {
        budget_runs: config.budget_runs,
        canaries,
        coverage,
    }
}

fn summarise(found: &[(u64, f64)], budget: u64) -> Streams {
    let mut runs: Vec<u64> = found.iter().map(|(runs, _)| *runs).collect();
    let mut cpu: Vec<f64> = found.iter().map(|(_, cpu)| *cpu).collect();
    let misses = found.iter().filter(|(runs, _)| *runs > budget).count() as u64;
    for r in &mut runs {
        *r = (*r).min(budget);
    }
    let (mut sorted_runs, mut sorted_cpu) = (runs.clone(), cpu.clone());
    sorted_runs.sort_unstable();
    sorted_cpu.sort_by(f64::total_cmp);
    cpu.iter_mut()
        .for_each(|c| *c = (*c * 1_000.0).round() / 1_000.0);
    Streams {
        median_runs: sorted_runs[sorted_runs.len() / 2],
        median_cpu_secs: sorted_cpu[sorted_cpu.len() / 2],
        runs,
        cpu_secs: cpu,
        misses,
    }
}

/// Runs until the first failure, from seed `first` on: (runs, CPU s);
/// runs past the budget when none failed.
fn swarm_detection(flaw: Flaw, first: u64, budget: u64) -> (u64, f64) {
    let started = thread_cpu_secs();
    for i in 0..budget {
        let spec = RunSpec {
            flaw: Some(flaw),
            ..swarm(first.wrapping_add(i), None)
        };
        if !check(&Sim::new(&spec).run().expect("valid")).passed() {
            return (i + 1, thread_cpu_secs() - started);
        }
    }
    (budget + 1, thread_cpu_secs() - started)
}

fn guided_detection(flaw: Flaw, first: u64, budget: u64) -> (u64, f64) {
    let started = thread_cpu_secs();
    let stop = AtomicBool::new(false);
    let config = campaign(first, budget, Some(flaw));
    let (summary, _) = guided_until(&config, &[], &stop, |at| {
        if at.failed > 0 {
            stop.store(true, Ordering::Relaxed);
        }
    });
    let cpu = thread_cpu_secs() - started;
    match summary.failures.first() {
        Some(failure) => (failure.seed - first + 1, cpu),
        None => (budget + 1, cpu),
    }
}

fn campaign(start: u64, runs: u64, flaw: Option<Flaw>) -> ExploreConfig {
    ExploreConfig {
        seeds: runs,
        start,
        jobs: 1,
        swarm: true,
        base: RunSpec::default(),
        replicas: None,
        flaw,
        shard: Shard::ALL,
        guided: true,
    }
}

/// One measurement of the bench, as the threads take them.
#[derive(Debug, Clone, Copy)]
enum Task {
    /// A canary's stream, guided or swarm.
    Canary(Flaw, bool, u64),
    /// The coverage comparison of one campaign seed.
    Coverage(u64),
}

fn swarm_reach(first: u64, runs: u64) -> Reach {
    let started = thread_cpu_secs();
    let mut probe_runs: BTreeMap<&'static str, u64> =
        PROBES.iter().map(|(name, _)| (*name, 0)).collect();
    let mut states: BTreeSet<Feature> = BTreeSet::new();
    for seed in first..first.saturating_add(runs) {
        let history = Sim::new(&swarm(seed, None)).run().expect("valid");
        check(&history);
        let reached = coverage(&history);
        for (probe, count) in &reached {
            if *count > 0 {
                *probe_runs.get_mut(probe).expect("a probe") += 1;
            }
        }
        // The signature, as guided computes it, to count the states.
        let signature = feedback(&history, &reached);
        states.extend(signature.features.keys().filter(|&&f| is_state(f)));
    }
    Reach {
        runs,
        cpu_secs: thread_cpu_secs() - started,
        probe_runs,
        states: states.len(),
    }
}

fn guided_reach(start: u64, cpu_secs: f64) -> Reach {
    let started = thread_cpu_secs();
    let stop = AtomicBool::new(false);
    let config = campaign(start, u64::MAX / 2, None);
    let (summary, report): (_, GuidedReport) = guided_until(&config, &[], &stop, |_| {
        if thread_cpu_secs() - started >= cpu_secs {
            stop.store(true, Ordering::Relaxed);
        }
    });
    Reach {
        runs: summary.runs,
        cpu_secs: thread_cpu_secs() - started,
        probe_runs: summary.probe_runs,
        states: report.states,
    }
}
