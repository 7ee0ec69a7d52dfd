//! What the many-run subcommands do: `explore` (a sweep, with its coverage
//! table and, with `--report`, the page `page.rs` writes) and `bench`. Each returns whether every run kept the contract, or
//! a message for bad input.

use std::io::IsTerminal;

use retention_sim::RunSpec;
use retention_sim::checker::PROBES;
use retention_sim::report::replay_command;
use retention_sim::search::{
    BenchConfig, ExploreConfig, SHRINK_RUNS, bench, explore, peak_rss_mb, shrink, violated_clause,
};

use crate::args::{BenchArgs, ExploreArgs};
use crate::commands::print_shrunk;
use crate::output::say;

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
    let (shard, shards) = args.shard;
    if shard > args.seeds {
        return Err(format!(
            "--shard {shard}/{shards}: of {} seeds, shard {shard} gets none",
            args.seeds
        ));
    }
    if !(1..=MAX_JOBS).contains(&args.jobs) {
        return Err(format!("--jobs: {} is not in 1..={MAX_JOBS}", args.jobs));
    }
    if let Some(replicas) = args.replicas
        && !(1..=5).contains(&replicas)
    {
        return Err(format!("--replicas: {replicas} is not in 1..=5"));
    }
    let config = ExploreConfig {
        seeds: args.seeds,
        start: args.start,
        // More threads than seeds would only wait.
        jobs: args
            .jobs
            .min(usize::try_from(args.seeds).unwrap_or(usize::MAX)),
        swarm: args.swarm,
        base: RunSpec {
            replicas: args.replicas.unwrap_or(3),
            ..RunSpec::default()
        },
        replicas: args.replicas,
        flaw: args.flaw,
        shard: args.shard,
    };
    let terminal = std::io::stderr().is_terminal();
    let progress = |done: u64| {
        if terminal && (done % 50 == 0 || done == args.seeds) {
            eprint!("\r{done}/{} runs", args.seeds);
        }
    };
    let summary = explore(&config, progress);
    if terminal {
        eprintln!();
    }
    // The first failure is printed at its smallest.
    let shrunk = summary.first_failure.as_ref().and_then(|(spec, _)| {
        violated_clause(spec).map(|clause| shrink(spec, clause, SHRINK_RUNS))
    });
    if let Some(dir) = &args.report {
        let command = std::env::args().collect::<Vec<_>>().join(" ");
        crate::page::write_report(dir, &command, &summary, shrunk.as_ref(), args.force)?;
    }
    if args.json {
        let json = serde_json::json!({
            "runs": summary.runs,
            "failed_runs": summary.failed_runs,
            "violations": summary.violations,
            "violations_by_clause": summary.violations_by_clause,
            "runs_per_sec": summary.runs_per_sec(),
            "sim_to_wall_ratio": summary.sim_to_wall_ratio(),
            "first_failure": shrunk.as_ref().map(|shrunk| replay_command(&shrunk.spec)),
            "first_failure_unshrunk": summary.first_failure.as_ref().map(|(_, command)| command),
            "shrunk": shrunk.as_ref().map(|shrunk| serde_json::json!({
                "clause": shrunk.clause,
                "size_before": shrunk.size_before,
                "size_after": shrunk.size_after,
                "runs": shrunk.runs,
            })),
            "peak_rss_mb": peak_rss_mb(),
            "coverage": summary.coverage,
        });
        say!("{json}");
    } else {
        say!(
            "{} runs, {} failed, {} violations; {:.0} runs/s, simulated/wall time {:.0}x",
            summary.runs,
            summary.failed_runs,
            summary.violations,
            summary.runs_per_sec(),
            summary.sim_to_wall_ratio()
        );
        for (clause, count) in &summary.violations_by_clause {
            say!("  {clause}: {count}");
        }
        print_coverage(&summary.coverage);
        if let Some((_, command)) = &summary.first_failure {
            say!("\nfirst failure, as drawn: {command}");
        }
        if let Some(shrunk) = &shrunk {
            print_shrunk(shrunk)?;
        }
        if let Some(mb) = peak_rss_mb() {
            say!("peak memory {mb:.1} MiB");
        }
    }
    Ok(summary.failed_runs == 0)
}

/// The coverage table: each probe, how often the sweep reached it, and
/// what it counts; probes never reached are marked.
fn print_coverage(coverage: &std::collections::BTreeMap<&'static str, u64>) {
    let missed = coverage.values().filter(|&&count| count == 0).count();
    say!(
        "coverage ({} of {} probes reached):",
        coverage.len() - missed,
        coverage.len()
    );
    for (probe, what) in PROBES {
        let count = coverage.get(probe).copied().unwrap_or(0);
        let mark = if count == 0 { "  NEVER" } else { "" };
        say!("  {probe:<38} {count:>8}  {what}{mark}");
    }
}

pub fn run_bench(args: &BenchArgs) -> Result<bool, String> {
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
    let report = bench(&config, |stage| eprintln!("bench: {stage}..."));
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
