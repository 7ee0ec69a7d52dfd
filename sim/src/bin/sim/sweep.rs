//! What the many-run subcommands do: `explore` (a sweep, its shrunk
//! failures and its summary; with `--report`, the page `page.rs` writes)
//! and `bench`. Each returns whether every run kept the contract, or a
//! message for bad input.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use retention_sim::model::replicas_problem;
use retention_sim::report::replay_command;
use retention_sim::search::{
    BenchConfig, ExploreConfig, ExploreSummary, FailedSeed, SHRINK_RUNS, Shrunk, base_spec, bench,
    explore_until, guided_until, shrink,
};
use retention_sim::sweep::Summary;

use crate::args::{BenchArgs, ExploreArgs};
use crate::files::{preflight, write_checked};
use crate::interrupt;
use crate::output::{say, tell};
use crate::progress::Watch;
use crate::tally::print_summary;

/// The most threads a sweep starts.
const MAX_JOBS: usize = 256;

pub fn run_explore(args: &ExploreArgs) -> Result<bool, String> {
    if args.seeds == 0 {
        return Err("--seeds must be at least 1".into());
    }
    if args.start.checked_add(args.seeds - 1).is_none() {
        return Err(format!(
            "--start {} with --seeds {}: the last seed would pass {} (seeds do not wrap)",
            args.start,
            args.seeds,
            u64::MAX
        ));
    }
    let shard = args.shard;
    if shard.index > args.seeds {
        return Err(format!(
            "--shard {shard}: of {} seeds, shard {} gets none",
            args.seeds, shard.index
        ));
    }
    if !(1..=MAX_JOBS).contains(&args.jobs) {
        return Err(format!("--jobs: {} is not in 1..={MAX_JOBS}", args.jobs));
    }
    if let Some(problem) = args.replicas.and_then(replicas_problem) {
        return Err(format!("--replicas: {problem}"));
    }
    let config = ExploreConfig {
        seeds: args.seeds,
        start: args.start,
        // More threads than seeds would only wait.
        jobs: args
            .jobs
            .min(usize::try_from(args.seeds).unwrap_or(usize::MAX)),
        swarm: args.swarm || args.guided,
        base: base_spec(args.replicas),
        replicas: args.replicas,
        flaw: args.flaw,
        shard: args.shard,
        guided: args.guided,
    };
    if let Some(shards) = args.print_shard_plan {
        return crate::plan::print_shard_plan(args, shards);
    }
    let outputs = output_files(args)?;
    let named: Vec<(&str, Option<&Path>)> = outputs
        .iter()
        .map(|(flag, path)| (*flag, Some(path.as_path())))
        .collect();
    preflight(&[], &named, args.force)?;
    let seed_plans = match &args.corpus {
        Some(dir) => crate::corpus::load(dir, args.flaw)?,
        None => Vec::new(),
    };
    interrupt::wind_down_on_signal();
    let watch = Watch::new(shard.seeds_in(args.seeds), args.quiet);
    let (swept, campaign) = if args.guided {
        let (swept, report) = guided_until(&config, &seed_plans, interrupt::stop_flag(), |at| {
            watch.update(at)
        });
        (swept, Some(report))
    } else {
        let swept = explore_until(&config, interrupt::stop_flag(), |at| watch.update(at));
        (swept, None)
    };
    watch.finish();
    if swept.jobs_run < config.jobs.max(1) {
        tell!(
            "sim: note: the system started {} of the {} threads asked for (--jobs); the sweep ran on those",
            swept.jobs_run,
            config.jobs
        );
    }
    let shrunk = shrink_failures(&config, &swept, args.shrink_max);
    let command = crate::output::command_line();
    let summary = Summary::of_sweep(&config, &swept, &shrunk, args.shrink_max, &command);
    // Printed before anything is written, so a refused write loses nothing.
    if args.json {
        say!("{}", summary.to_json());
    } else {
        print_summary(&summary, &[])?;
        if let Some(report) = &campaign {
            crate::corpus::print_campaign(report);
        }
        if args.hints {
            crate::hints::print_hints(&summary, config.jobs)?;
        }
    }
    let mut refused = Vec::new();
    if let (Some(dir), Some(report)) = (&args.corpus, &campaign)
        && let Err(problem) = crate::corpus::save(dir, args.start, shard, &report.plans)
    {
        refused.push(format!("--corpus {problem}"));
    }
    if let Some(path) = &args.summary {
        let written = write_checked(path, &summary.to_json(), args.force, |text| {
            serde_json::from_str::<Summary>(text)
                .map(|_| ())
                .map_err(|error| format!("the written summary does not read back: {error}"))
        });
        if let Err(problem) = written {
            refused.push(format!("--summary {problem}"));
        }
    }
    if let Some(dir) = &args.report {
        let first = swept.failures.first().and_then(|f| shrunk.get(&f.seed));
        if let Err(problem) = crate::page::write_report(dir, &command, &swept, first, args.force) {
            refused.push(problem);
        }
    }
    if !refused.is_empty() {
        return Err(refused.join("; "));
    }
    Ok(summary.failed_runs == 0)
}

/// The files `explore` writes, checked before the sweep starts: the
/// report's pages if its folder exists, else the folder it would make.
fn output_files(args: &ExploreArgs) -> Result<Vec<(&'static str, PathBuf)>, String> {
    let mut files = Vec::new();
    if let Some(path) = &args.summary {
        files.push(("--summary", path.clone()));
    }
    if let Some(dir) = &args.report {
        match std::fs::symlink_metadata(dir) {
            Ok(found) if found.is_dir() => {
                files.push(("--report", dir.join("index.html")));
                files.push(("--report", dir.join("first-failure.svg")));
            }
            Ok(_) => {
                return Err(format!(
                    "--report {}: is not a folder (a file or a link); not replaced",
                    dir.display()
                ));
            }
            Err(_) => files.push(("--report", dir.clone())),
        }
    }
    Ok(files)
}

/// Shrinks the lowest `max` failing seeds, on the sweep's threads. Skipped
/// once interrupted: the failures are then listed as drawn.
fn shrink_failures(
    config: &ExploreConfig,
    swept: &ExploreSummary,
    max: u64,
) -> BTreeMap<u64, Shrunk> {
    let take = usize::try_from(max).unwrap_or(usize::MAX);
    let chosen: Vec<&FailedSeed> = swept.failures.iter().take(take).collect();
    let next = AtomicUsize::new(0);
    let shrunk = Mutex::new(BTreeMap::new());
    let work = || {
        while !interrupt::interrupted() {
            let Some(failure) = chosen.get(next.fetch_add(1, Ordering::Relaxed)) else {
                return;
            };
            let spec = swept.plan(config, failure.seed);
            let result = shrink(&spec, failure.clauses[0], SHRINK_RUNS);
            shrunk
                .lock()
                .expect("no panic while shrinking")
                .insert(failure.seed, result);
        }
    };
    std::thread::scope(|scope| {
        let mut started = 0;
        for _ in 0..swept.jobs_run.clamp(1, chosen.len().max(1)) {
            // As the sweep: the threads the system gives, at least this one.
            match std::thread::Builder::new().spawn_scoped(scope, work) {
                Ok(_) => started += 1,
                Err(_) => break,
            }
        }
        if started == 0 {
            work();
        }
    });
    shrunk.into_inner().expect("no panic while shrinking")
}

pub fn run_bench(args: &BenchArgs) -> Result<bool, String> {
    if args.guided {
        return crate::guided_bench::run(args);
    }
    let ranges: [(&str, u64, std::ops::RangeInclusive<u64>); 4] = [
        ("--rounds", args.rounds.into(), 1..=1_000),
        ("--runs-per-round", args.runs_per_round, 1..=1_000_000),
        ("--streams", args.streams, 1..=1_000),
        ("--memory-runs", args.memory_runs, 1_000..=100_000_000),
    ];
    for (flag, value, range) in ranges {
        if !range.contains(&value) {
            return Err(format!(
                "{flag}: {value} is not in {}..={}",
                range.start(),
                range.end()
            ));
        }
    }
    let config = BenchConfig {
        rounds: args.rounds,
        runs_per_round: args.runs_per_round,
        streams: args.streams,
        memory_runs: args.memory_runs,
        ..BenchConfig::default()
    };
    let report = bench(&config, |stage| tell!("bench: {stage}..."));
    let passed = report.real_worker_failed_seeds.is_empty();
    if args.json {
        say!(
            "{}",
            serde_json::to_string(&report).map_err(|error| error.to_string())?
        );
        return Ok(passed);
    }
    for seed in &report.real_worker_failed_seeds {
        let spec = retention_sim::search::standard(*seed);
        say!(
            "the real worker failed a speed run: {}",
            replay_command(&spec)
        );
    }
    say!("standard scenario: 3 replicas, 5,000-row backlog, swarm faults; one thread");
    say!(
        "  runs/s checked {:.0}, bare {:.0}; overhead {:.2}x",
        report.runs_per_sec_checked,
        report.runs_per_sec_bare,
        report.overhead_ratio
    );
    say!("  simulated/wall time {:.0}x", report.sim_to_wall_ratio);
    let (cheapest, dearest) = report.cpu_ms_per_run_spread;
    say!(
        "explore's default plan (sim explore --jobs 1): {:.2} CPU ms per run \
         (rounds {cheapest:.2} to {dearest:.2}); --jobs 2 runs {:.2}x as fast",
        report.cpu_ms_per_run,
        report.jobs_2_speedup
    );
    say!(
        "  peak memory {:.1} MiB after 1,000 runs, {:.1} MiB after {} runs",
        report.rss_mb_after_1k,
        report.rss_mb_after_memory_runs,
        report.memory_runs
    );
    say!(
        "seeds to first detection over {} streams (median / max, streams that missed):",
        config.streams
    );
    for (flaw, figures) in &report.flaws {
        let (r, s) = (figures.random, figures.swarm);
        say!(
            "  {flaw:<22} random {:>3} / {:>3} ({} missed)   swarm {:>3} / {:>3} ({} missed)",
            r.median,
            r.max,
            r.misses,
            s.median,
            s.max,
            s.misses
        );
    }
    Ok(passed)
}
