//! `sim bench`: how fast the harness runs, what recording and checking cost,
//! how quickly the search finds each review flaw, and whether memory stays
//! flat over a long sweep. Figures are medians and ratios over rounds.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use super::explore::{ExploreConfig, explore, peak_rss_mb};
use super::guided::thread_cpu_secs;
use super::shard::Shard;
use super::swarm::swarm;
use crate::checker::check;
use crate::model::{FaultConfig, Flaw, RunSpec};
use crate::subject::Sim;

/// How much to measure. Defaults give the figures the issue asks for.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Rounds of the speed measurement; each runs the same seeds checked
    /// and bare.
    pub rounds: u32,
    /// Runs per round and mode.
    pub runs_per_round: u64,
    /// Independent seed streams per flaw and mode.
    pub streams: u64,
    /// Seeds a stream may try before it counts as not finding the flaw.
    pub seed_budget: u64,
    /// Runs of the memory sweep (figures after 1,000 and after all).
    pub memory_runs: u64,
}

impl Default for BenchConfig {
    fn default() -> Self {
        Self {
            rounds: 5,
            runs_per_round: 200,
            streams: 20,
            seed_budget: 200,
            memory_runs: 100_000,
        }
    }
}

/// Seeds until first detection over the streams.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Detection {
    /// Median over the streams.
    pub median: u64,
    /// Worst stream.
    pub max: u64,
    /// Streams that exhausted the budget without a detection.
    pub misses: u64,
}

/// Detection in both search modes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FlawFigures {
    /// One fixed, moderate fault mix for every seed.
    pub random: Detection,
    /// The fault mix drawn from each seed.
    pub swarm: Detection,
}

/// Everything `sim bench` reports.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Runs per second, one thread, history recorded and checked.
    pub runs_per_sec_checked: f64,
    /// Runs per second for the same seeds, nothing recorded or checked.
    pub runs_per_sec_bare: f64,
    /// Checked time over bare time (median round).
    pub overhead_ratio: f64,
    /// Simulated time over wall time, checked runs.
    pub sim_to_wall_ratio: f64,
    /// Peak resident memory after 1,000 runs, MiB.
    pub rss_mb_after_1k: f64,
    /// Peak resident memory after all the memory sweep's runs, MiB.
    pub rss_mb_after_memory_runs: f64,
    /// Runs in the memory sweep.
    pub memory_runs: u64,
    /// What a run of `sim explore` (its default plan: 3 replicas, no
    /// faults) costs: CPU milliseconds of one thread per run, median round.
    pub cpu_ms_per_run: f64,
    /// The cheapest and dearest round, CPU milliseconds per run.
    pub cpu_ms_per_run_spread: (f64, f64),
    /// The same runs on two threads: wall time of one thread over two.
    pub jobs_2_speedup: f64,
    /// Seeds to first detection, by flaw name.
    pub flaws: BTreeMap<&'static str, FlawFigures>,
    /// Seeds of the speed rounds the real worker failed (a bench is no
    /// place to hide a failure; `sim bench` exits 1 when there are any).
    pub real_worker_failed_seeds: Vec<u64>,
}

/// The standard scenario: three replicas, the default 5,000-row backlog,
/// swarm faults.
pub fn standard(seed: u64) -> RunSpec {
    swarm(seed, Some(3))
}

/// The fixed fault mix of the plain random search.
fn moderate_faults() -> FaultConfig {
    FaultConfig {
        latency_ms_max: 100,
        renew_reply_delay_permille: 100,
        reject_permille: 20,
        ambiguous_permille: 20,
        null_renew_permille: 10,
        packet_loss_permille: 5,
        clock_skew_ms_max: 200,
    }
}

/// Runs the benchmark; `progress` hears what is being measured.
pub fn bench(config: &BenchConfig, progress: impl Fn(&str)) -> BenchReport {
    progress("speed");
    let (checked, bare, sim_secs, failed) = speed(config);
    progress("cost per run");
    let (cpu_ms, jobs_2_speedup) = run_cost(config);
    progress("seeds to detection");
    let flaws = Flaw::catalogue()
        .map(|flaw| (flaw.name(), detection(config, flaw)))
        .collect();
    progress("memory");
    let (after_1k, after_all) = memory(config.memory_runs);
    let median = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let runs = config.runs_per_round as f64;
    let checked_secs = median(checked.clone());
    let bare_secs = median(bare);
    BenchReport {
        runs_per_sec_checked: runs / checked_secs,
        runs_per_sec_bare: runs / bare_secs,
        overhead_ratio: checked_secs / bare_secs,
        sim_to_wall_ratio: sim_secs / checked.iter().sum::<f64>(),
        cpu_ms_per_run: median(cpu_ms.clone()),
        cpu_ms_per_run_spread: (
            cpu_ms.iter().copied().fold(f64::INFINITY, f64::min),
            cpu_ms.iter().copied().fold(0.0, f64::max),
        ),
        jobs_2_speedup,
        rss_mb_after_1k: after_1k,
        rss_mb_after_memory_runs: after_all,
        memory_runs: config.memory_runs,
        flaws,
        real_worker_failed_seeds: failed,
    }
}

/// Per round: wall seconds checked, wall seconds bare; simulated seconds
/// over all checked rounds; the seeds whose run the real worker failed.
fn speed(config: &BenchConfig) -> (Vec<f64>, Vec<f64>, f64, Vec<u64>) {
    let (mut checked, mut bare, mut sim_secs) = (Vec::new(), Vec::new(), 0.0);
    let mut failed = Vec::new();
    for round in 0..u64::from(config.rounds) {
        let seeds = round * config.runs_per_round..(round + 1) * config.runs_per_round;
        let started = Instant::now();
        for seed in seeds.clone() {
            let history = Sim::new(&standard(seed))
                .run()
                .expect("standard specs are valid");
            if !check(&history).passed() {
                failed.push(seed);
            }
            sim_secs += history.events.last().map_or(0, |e| e.at_ms) as f64 / 1_000.0;
        }
        checked.push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        for seed in seeds {
            Sim::new(&standard(seed))
                .recorded(false)
                .run()
                .expect("standard specs are valid");
        }
        bare.push(started.elapsed().as_secs_f64());
    }
    (checked, bare, sim_secs, failed)
}

/// Per round, one thread's CPU milliseconds per run of `sim explore`'s
/// default plan (the command issue 40 measures, `sim explore --seeds 1000
/// --jobs 1`); and two threads' speedup in wall time over the same seeds.
fn run_cost(config: &BenchConfig) -> (Vec<f64>, f64) {
    let explore_config = |round: u64, jobs: usize| ExploreConfig {
        seeds: config.runs_per_round,
        start: round * config.runs_per_round,
        jobs,
        base: RunSpec {
            replicas: 3,
            ..RunSpec::default()
        },
        swarm: false,
        replicas: None,
        flaw: None,
        shard: Shard::ALL,
        guided: false,
    };
    let (mut cpu_ms, mut one_thread_secs, mut two_threads_secs) = (Vec::new(), 0.0, 0.0);
    for round in 0..u64::from(config.rounds) {
        // One job runs on this thread, so its CPU time is this thread's.
        let before = thread_cpu_secs();
        let one = explore(&explore_config(round, 1), |_| {});
        cpu_ms.push((thread_cpu_secs() - before) * 1_000.0 / config.runs_per_round as f64);
        one_thread_secs += one.wall_secs;
        two_threads_secs += explore(&explore_config(round, 2), |_| {}).wall_secs;
    }
    (cpu_ms, one_thread_secs / two_threads_secs)
}

fn detection(config: &BenchConfig, flaw: Flaw) -> FlawFigures {
    let search = |make: &dyn Fn(u64) -> RunSpec| {
        let mut counts: Vec<u64> = (0..config.streams)
            .map(|stream| {
                let first = stream.wrapping_mul(1_000_003).wrapping_add(17);
                (0..config.seed_budget)
                    .find(|i| !check(&Sim::new(&make(first + i)).run().expect("valid")).passed())
                    .map_or(u64::MAX, |i| i + 1)
            })
            .collect();
        counts.sort_unstable();
        let misses = counts.iter().filter(|c| **c == u64::MAX).count() as u64;
        let shown = |c: u64| c.min(config.seed_budget);
        Detection {
            median: shown(counts[counts.len() / 2]),
            max: shown(counts[counts.len() - 1]),
            misses,
        }
    };
    let random = |seed| RunSpec {
        seed,
        replicas: 3,
        faults: moderate_faults(),
        flaw: Some(flaw),
        ..RunSpec::default()
    };
    let swarmed = |seed| RunSpec {
        flaw: Some(flaw),
        ..standard(seed)
    };
    FlawFigures {
        random: search(&random),
        swarm: search(&swarmed),
    }
}

/// Peak memory after 1,000 checked runs and after `runs`.
fn memory(runs: u64) -> (f64, f64) {
    let mut after_1k = f64::NAN;
    for seed in 0..runs {
        let history = Sim::new(&standard(seed))
            .run()
            .expect("standard specs are valid");
        check(&history);
        if seed + 1 == 1_000 {
            after_1k = peak_rss_mb().unwrap_or(f64::NAN);
        }
    }
    (after_1k, peak_rss_mb().unwrap_or(f64::NAN))
}
