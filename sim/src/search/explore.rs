//! Sweeps many seeds across threads and sums up the verdicts.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use super::shard::Shard;
use super::swarm::swarm;
use crate::checker::{Verdict, check, coverage};
use crate::model::{Flaw, RunSpec};
use crate::report::replay_command;
use crate::subject::Sim;

/// What to sweep.
#[derive(Debug, Clone)]
pub struct ExploreConfig {
    /// How many seeds.
    pub seeds: u64,
    /// The first seed.
    pub start: u64,
    /// Worker threads; each run gets a fresh runtime on its thread.
    pub jobs: usize,
    /// Draw each run's faults from its seed; otherwise `base` for every seed.
    pub swarm: bool,
    /// The spec each seed starts from when not in swarm mode.
    pub base: RunSpec,
    /// Fix the replica count in swarm mode.
    pub replicas: Option<u32>,
    /// Run the variant with this flaw instead of the real worker.
    pub flaw: Option<Flaw>,
    /// Run only this shard's seeds, so that machines split one sweep;
    /// [`Shard::ALL`] is every seed.
    pub shard: Shard,
    /// A guided campaign ([`crate::search::guided_until`]): the seeds
    /// number its runs, and each run's plan is the campaign's choice.
    pub guided: bool,
}

/// A sweep's results. Violations count runs' violations by clause.
#[derive(Debug, Clone, Default)]
pub struct ExploreSummary {
    /// Runs completed.
    pub runs: u64,
    /// Runs with at least one violation.
    pub failed_runs: u64,
    /// Violations over all runs.
    pub violations: u64,
    /// Violations by clause ID.
    pub violations_by_clause: BTreeMap<String, u64>,
    /// The lowest failing seed's spec and its replay command.
    pub first_failure: Option<(RunSpec, String)>,
    /// Wall-clock seconds the sweep took.
    pub wall_secs: f64,
    /// Simulated seconds over all runs.
    pub simulated_secs: f64,
    /// How often each coverage probe was reached, over all runs (every
    /// probe of [`crate::checker::PROBES`] is a key).
    pub coverage: BTreeMap<&'static str, u64>,
    /// How many runs reached each probe at least once (the probes reached).
    pub probe_runs: BTreeMap<&'static str, u64>,
    /// Every failing seed, lowest first.
    pub failures: Vec<FailedSeed>,
    /// Seeds of the range visited (in this shard or not), from its start:
    /// the whole range unless the sweep was stopped. Every visited seed of
    /// the shard was run to its end, so the runs are exactly the shard's
    /// seeds below `start + visited`.
    pub visited: u64,
    /// The threads the sweep ran on: `jobs`, or fewer when the system
    /// would not start more.
    pub jobs_run: usize,
    /// The failing runs' plans by their number, where the number alone
    /// does not give the plan (a guided campaign's runs); empty otherwise,
    /// the plan being [`spec_for`] the seed.
    pub plans: BTreeMap<u64, RunSpec>,
}

/// One failing run of a sweep: its seed and the clauses it violated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedSeed {
    /// The seed (the spec is [`spec_for`] it).
    pub seed: u64,
    /// Each clause violated, once, in the order the checker found them; the
    /// first is the one a shrink keeps.
    pub clauses: Vec<&'static str>,
}

/// How far a sweep has got, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Runs finished.
    pub done: u64,
    /// Of those, runs with a violation.
    pub failed: u64,
}

impl ExploreSummary {
    /// Runs per wall-clock second.
    pub fn runs_per_sec(&self) -> f64 {
        self.runs as f64 / self.wall_secs.max(1e-9)
    }

    /// Simulated time over wall time.
    pub fn sim_to_wall_ratio(&self) -> f64 {
        self.simulated_secs / self.wall_secs.max(1e-9)
    }

    /// The plan of run `number` of the sweep `config` ran.
    pub fn plan(&self, config: &ExploreConfig, number: u64) -> RunSpec {
        self.plans
            .get(&number)
            .cloned()
            .unwrap_or_else(|| spec_for(config, number))
    }
}

/// The process's peak resident memory in MiB (Linux), for spotting leaks
/// across long sweeps.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The plan a sweep without `--swarm` runs, with the seed left at its
/// default: the default plan on `replicas` (3 when not given).
pub fn base_spec(replicas: Option<u32>) -> RunSpec {
    RunSpec {
        replicas: replicas.unwrap_or(3),
        ..RunSpec::default()
    }
}

/// The spec explore runs for `seed`.
pub fn spec_for(config: &ExploreConfig, seed: u64) -> RunSpec {
    let spec = if config.swarm {
        swarm(seed, config.replicas)
    } else {
        RunSpec {
            seed,
            ..config.base.clone()
        }
    };
    RunSpec {
        flaw: config.flaw,
        ..spec
    }
}

/// Runs every seed, calling `progress(done)` after each run.
pub fn explore(config: &ExploreConfig, progress: impl Fn(u64) + Sync) -> ExploreSummary {
    explore_until(config, &AtomicBool::new(false), |at| progress(at.done))
}

/// Runs every seed until `stop` is set: then no new run starts, the runs
/// under way finish, and the summary covers exactly the seeds visited
/// ([`ExploreSummary::visited`]). `progress` hears of every finished run.
pub fn explore_until(
    config: &ExploreConfig,
    stop: &AtomicBool,
    progress: impl Fn(Progress) + Sync,
) -> ExploreSummary {
    let started = Instant::now();
    // This shard's seeds taken so far: the k-th is at `nth_index(k)`.
    let taken = AtomicU64::new(0);
    let summary = Mutex::new(ExploreSummary::default());
    let work = || {
        loop {
            // Checked before an index is taken, so every index taken is
            // run: the visited seeds stay one unbroken prefix.
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let k = taken.fetch_add(1, Ordering::Relaxed);
            let Some(index) = config.shard.nth_index(k).filter(|&i| i < config.seeds) else {
                return;
            };
            let spec = spec_for(config, config.start.wrapping_add(index));
            let history = Sim::new(&spec).run().expect("explore builds valid specs");
            let verdict = check(&history);
            let end_ms = history.events.last().map_or(0, |e| e.at_ms);
            let reached = coverage(&history);
            let at = record(&summary, spec.seed, &spec, &verdict, end_ms, reached);
            progress(at);
        }
    };
    let jobs_run = on_threads(config.jobs, work);
    let mut summary = summary.into_inner().expect("no panic while summing");
    summary.wall_secs = started.elapsed().as_secs_f64();
    summary.jobs_run = jobs_run;
    // Every seed of the shard below the first not taken was run.
    let first_not_taken = config.shard.nth_index(taken.into_inner());
    summary.visited = first_not_taken.map_or(config.seeds, |index| index.min(config.seeds));
    summary.failures.sort_by_key(|failure| failure.seed);
    summary
}

/// Runs `work` on `threads` threads, each until it returns, or on the
/// caller's thread when `threads` is at most 1 (so that its CPU time is
/// the caller's); returns the threads it ran on. A system short of threads
/// (or of address space for their stacks) runs it on those it gave, at
/// least the caller's.
pub(super) fn on_threads(threads: usize, work: impl Fn() + Sync) -> usize {
    if threads <= 1 {
        work();
        return 1;
    }
    let mut started = 0;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            match std::thread::Builder::new().spawn_scoped(scope, &work) {
                Ok(_) => started += 1,
                Err(_) => break,
            }
        }
        if started == 0 {
            work();
            started = 1;
        }
    });
    started
}

/// Adds run `number`'s verdict to `summary`.
pub(super) fn record(
    summary: &Mutex<ExploreSummary>,
    number: u64,
    spec: &RunSpec,
    verdict: &Verdict,
    end_ms: i64,
    reached: BTreeMap<&'static str, u64>,
) -> Progress {
    let mut summary = summary.lock().expect("no panic while summing");
    summary.runs += 1;
    for (probe, count) in reached {
        *summary.coverage.entry(probe).or_default() += count;
        if count > 0 {
            *summary.probe_runs.entry(probe).or_default() += 1;
        }
    }
    summary.simulated_secs += end_ms as f64 / 1_000.0;
    if verdict.passed() {
        return Progress {
            done: summary.runs,
            failed: summary.failed_runs,
        };
    }
    summary.failed_runs += 1;
    for violation in &verdict.violations {
        summary.violations += 1;
        *summary
            .violations_by_clause
            .entry(violation.clause.to_owned())
            .or_default() += 1;
    }
    summary.failures.push(FailedSeed {
        seed: number,
        clauses: verdict.clauses(),
    });
    let earlier = summary
        .first_failure
        .as_ref()
        .is_none_or(|(first, _)| number < first.seed);
    if earlier {
        summary.first_failure = Some((spec.clone(), replay_command(spec)));
    }
    Progress {
        done: summary.runs,
        failed: summary.failed_runs,
    }
}
