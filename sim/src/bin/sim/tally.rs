//! A sweep summary printed for people: the counts, the shards it covers,
//! the coverage table, the first failure at its smallest and the rest of
//! the failures. `explore` and `merge` print through this one function.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use retention_sim::checker::PROBES;
use retention_sim::model::RunSpec;
use retention_sim::report::{parse_token, replay_command};

use crate::commands::print_shrunk_plan;
use crate::output::say;
use retention_sim::sweep::{Summary, Token};

/// Failures listed by seed after the first; the rest are in the JSON.
const FAILURES_LISTED: usize = 10;

/// Prints `summary`; `missing` names shards a merge did not get.
pub fn print_summary(summary: &Summary, missing: &[RangeInclusive<u64>]) -> Result<(), String> {
    say!(
        "{} runs, {} failed, {} violations; {:.0} runs/s, simulated/wall time {:.0}x",
        summary.runs,
        summary.failed_runs,
        summary.violations,
        summary.runs_per_sec,
        summary.sim_to_wall_ratio
    );
    for (clause, count) in &summary.violations_by_clause {
        say!("  {clause}: {count}");
    }
    print_shards(summary, missing);
    print_coverage(&summary.coverage);
    if let Some(first) = summary.failures.first() {
        let drawn = plan_of(first.seed, "token", &first.token)?;
        say!("\nfirst failure, as drawn: {}", replay_command(&drawn));
        if let Some(shrunk) = &first.shrunk {
            let spec = plan_of(first.seed, "shrunk.token", &shrunk.token)?;
            let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
            let sizes = (
                size(shrunk.size_before),
                size(shrunk.size_after),
                size(shrunk.runs),
            );
            print_shrunk_plan(&spec, &shrunk.clause, sizes)?;
        }
    }
    if summary.failures.len() > 1 {
        print_failures(summary)?;
    }
    print_findability(summary);
    if let Some(mb) = summary.peak_rss_mb {
        say!("peak memory {mb:.1} MiB");
    }
    Ok(())
}

/// Each failing clause's rate, and the clean runs a fix needs (README,
/// "findability").
fn print_findability(summary: &Summary) {
    if summary.failures.is_empty() {
        return;
    }
    let Some(figures) = retention_sim::sweep::findability(summary) else {
        say!(
            "findability: a guided campaign's runs are chosen from each other, so they give no \
             rate; sweep with --swarm for one"
        );
        return;
    };
    say!("findability (a fix is credible at 95 % after n = ln 0.05 / ln(1 - p) clean runs):");
    for figure in figures.values() {
        say!(
            "  {}: {} of {} runs, p = {:.2e}; a fix needs {} clean runs",
            figure.clause,
            figure.failures,
            figure.runs,
            figure.rate,
            figure.clean_runs_needed
        );
    }
}

/// The plan of the failure of `seed`, or an error naming the failure and
/// the field: another build's summary may hold plans this one cannot read.
fn plan_of(seed: u64, field: &str, token: &Token) -> Result<RunSpec, String> {
    parse_token(token.as_str())
        .map_err(|problem| format!("the failure of seed {seed}: {field}: {problem}"))
}

/// How many of a range's first `seeds` indices shards `first..=last` of
/// `count` hold: whole cycles of `count`, then the last cycle's part.
fn seeds_of_shards(first: u64, last: u64, count: u64, seeds: u64) -> u64 {
    let (first, last, count, seeds) = (
        u128::from(first),
        u128::from(last),
        u128::from(count),
        u128::from(seeds),
    );
    let width = last - first + 1;
    let partial = (seeds % count).saturating_sub(first - 1).min(width);
    u64::try_from(seeds / count * width + partial).expect("at most the range's seeds")
}

/// Which shards the summary covers, and what it lacks: a shard stopped
/// early or missing.
fn print_shards(summary: &Summary, missing: &[RangeInclusive<u64>]) {
    let shards = &summary.shards;
    let seeds = &summary.sweep;
    let last = seeds.start.saturating_add(seeds.seeds - 1);
    if shards.count > 1 {
        let held: Vec<String> = shards.held.iter().map(|p| p.index.to_string()).collect();
        say!(
            "shards {} of {} of seeds {}..={last}",
            held.join(", "),
            shards.count,
            seeds.start
        );
    }
    for run in missing {
        let (first, last) = (*run.start(), *run.end());
        let not_run = seeds_of_shards(first, last, shards.count, seeds.seeds);
        if first == last {
            say!(
                "MISSING shard {first}/{}: its {not_run} seeds were not run",
                shards.count
            );
        } else {
            say!(
                "MISSING shards {first} to {last} of {}: their {not_run} seeds were not run",
                shards.count
            );
        }
    }
    for part in &shards.held {
        if part.visited < seeds.seeds {
            let shard = shards.shard(part);
            let (wanted, ran) = (shard.seeds_in(seeds.seeds), shard.seeds_in(part.visited));
            say!(
                "PARTIAL shard {}/{}: interrupted after {ran} of its {wanted} seeds \
                 (every seed below {} was run)",
                part.index,
                shards.count,
                seeds.start.saturating_add(part.visited)
            );
        }
    }
}

/// Each failure after the first, lowest seed first, with the command that
/// replays it at its smallest when it was shrunk.
fn print_failures(summary: &Summary) -> Result<(), String> {
    let distinct: std::collections::BTreeSet<String> = summary
        .failures
        .iter()
        .filter_map(|f| f.signature())
        .collect();
    let shrunk = summary.shrunk_failures();
    say!(
        "\n{} failures; {shrunk} shrunk, to {} distinct plans (lowest seeds first):",
        summary.failures.len(),
        distinct.len()
    );
    for failure in summary.failures.iter().take(FAILURES_LISTED) {
        let spec = plan_of(failure.seed, "token", failure.best_token())?;
        let state = if failure.shrunk.is_some() {
            "shrunk"
        } else {
            "as drawn"
        };
        say!(
            "  seed {} {} ({state}): {}",
            failure.seed,
            failure.clauses.join(", "),
            replay_command(&spec)
        );
    }
    if summary.failures.len() > FAILURES_LISTED {
        say!(
            "  ... and {} more (every one is in --json and --summary)",
            summary.failures.len() - FAILURES_LISTED
        );
    }
    Ok(())
}

/// The coverage table: each probe, how often the sweep reached it, and
/// what it counts; probes never reached are marked.
fn print_coverage(coverage: &BTreeMap<String, u64>) {
    let missed = PROBES
        .iter()
        .filter(|(probe, _)| coverage.get(*probe).copied().unwrap_or(0) == 0)
        .count();
    say!(
        "coverage ({} of {} probes reached):",
        PROBES.len() - missed,
        PROBES.len()
    );
    for (probe, what) in PROBES {
        let count = coverage.get(*probe).copied().unwrap_or(0);
        let mark = if count == 0 { "  NEVER" } else { "" };
        say!("  {probe:<38} {count:>8}  {what}{mark}");
    }
}
