//! `sim bench --guided`: the canaries' detection table and the coverage
//! comparison, swarm against guided, as text or JSON.

use retention_sim::search::{GuidedBenchConfig, Reach, Streams, bench_guided};

use crate::args::BenchArgs;
use crate::output::{say, tell};

pub fn run(args: &BenchArgs) -> Result<bool, String> {
    for (flag, value, range) in [
        ("--budget-runs", args.budget_runs, 1..=100_000_000),
        ("--coverage-runs", args.coverage_runs, 0..=100_000_000),
        ("--coverage-seeds", args.coverage_seeds, 1..=1_000),
        ("--jobs", args.jobs as u64, 1..=256),
    ] {
        if !range.contains(&value) {
            return Err(format!(
                "{flag}: {value} is not in {}..={}",
                range.start(),
                range.end()
            ));
        }
    }
    if let Some(flaw) = args.canaries.iter().find(|flaw| !flaw.is_canary()) {
        return Err(format!(
            "--canary: {flaw} is a flaw of the catalogue, not a canary"
        ));
    }
    // --streams defaults to the catalogue's 20; five are enough here.
    let streams = if args.streams == 20 { 5 } else { args.streams };
    let config = GuidedBenchConfig {
        streams,
        budget_runs: args.budget_runs,
        coverage_runs: args.coverage_runs,
        coverage_seeds: args.coverage_seeds,
        jobs: args.jobs,
        canaries: args.canaries.clone(),
        swarm_streams: !args.guided_only,
    };
    let report = bench_guided(&config, |stage| {
        if !args.json {
            tell!("bench: {stage}");
        }
    });
    if args.json {
        say!(
            "{}",
            serde_json::to_string(&report).map_err(|error| error.to_string())?
        );
        return Ok(true);
    }
    say!(
        "rare-bug canaries: runs to first detection over {streams} streams (budget {} runs; a miss counts as the budget)",
        report.budget_runs
    );
    say!(
        "  {:<48} {:>26} {:>26} {:>7}",
        "canary (clauses)",
        "swarm median (misses)",
        "guided median (misses)",
        "ratio"
    );
    let cell = |s: &Streams| {
        format!(
            "{} runs {:.1} s ({})",
            s.median_runs, s.median_cpu_secs, s.misses
        )
    };
    for (name, (clauses, swarm, guided)) in &report.canaries {
        let ratio = swarm.as_ref().map_or("-".to_string(), |swarm| {
            format!(
                "{:.1}x",
                swarm.median_runs as f64 / guided.median_runs.max(1) as f64
            )
        });
        say!(
            "  {:<48} {:>26} {:>26} {:>7}",
            format!("{name} ({})", clauses.join(",")),
            swarm.as_ref().map_or("not measured".to_string(), cell),
            cell(guided),
            ratio
        );
        say!(
            "      swarm runs {}; guided runs {:?}",
            swarm
                .as_ref()
                .map_or("-".to_string(), |swarm| format!("{:?}", swarm.runs)),
            guided.runs
        );
    }
    print_coverage(&report.coverage);
    Ok(true)
}

/// The coverage comparisons, one campaign seed a line, then each probe's
/// reach pooled over the seeds with its ratio per seed and the median.
fn print_coverage(pairs: &[(Reach, Reach)]) {
    if pairs.is_empty() {
        return;
    }
    say!("coverage at equal CPU time, per campaign seed (each against swarm runs of its own):");
    for (seed, (s, g)) in pairs.iter().enumerate() {
        say!(
            "  seed {seed}: swarm {} runs in {:.1} s, guided {} runs in {:.1} s; distinct abstract states {} and {} ({:.2}x); per 10,000 runs {:.0} and {:.0}",
            s.runs,
            s.cpu_secs,
            g.runs,
            g.cpu_secs,
            s.states,
            g.states,
            g.states as f64 / s.states.max(1) as f64,
            per_10k(s.states as u64, s.runs),
            per_10k(g.states as u64, g.runs)
        );
    }
    let states: Vec<f64> = pairs
        .iter()
        .map(|(s, g)| g.states as f64 / s.states.max(1) as f64)
        .collect();
    say!(
        "  distinct abstract states, guided over swarm: {}",
        spread(&states)
    );
    say!(
        "  {:<42} {:>12} {:>12}  guided over swarm, by seed",
        "probe: runs reaching it per 10,000",
        "swarm",
        "guided"
    );
    let total = |pick: fn(&(Reach, Reach)) -> &Reach, probe: &str| {
        pairs.iter().map(pick).fold((0, 0), |(count, runs), reach| {
            (
                count + reach.probe_runs.get(probe).copied().unwrap_or(0),
                runs + reach.runs,
            )
        })
    };
    // Per probe: swarm's runs reaching it and its runs, then guided's.
    type Pooled = (u64, u64);
    let mut rows: Vec<(&str, Pooled, Pooled)> = pairs[0]
        .0
        .probe_runs
        .keys()
        .map(|&probe| (probe, total(|p| &p.0, probe), total(|p| &p.1, probe)))
        .collect();
    rows.sort_by_key(|&(probe, (swarm, _), _)| (swarm, probe));
    for (probe, (swarm, swarm_runs), (guided, guided_runs)) in rows {
        let ratios: Vec<f64> = pairs
            .iter()
            .map(|(s, g)| {
                let count = |reach: &Reach| reach.probe_runs.get(probe).copied().unwrap_or(0);
                count(g) as f64 / count(s).max(1) as f64
            })
            .collect();
        say!(
            "  {probe:<42} {:>12.1} {:>12.1}  {}",
            per_10k(swarm, swarm_runs),
            per_10k(guided, guided_runs),
            spread(&ratios)
        );
    }
}

fn per_10k(count: u64, runs: u64) -> f64 {
    count as f64 * 10_000.0 / runs.max(1) as f64
}

/// Ratios as `1.22x 1.42x 1.28x, median 1.28x` (of an even count, the
/// mean of the middle two).
fn spread(ratios: &[f64]) -> String {
    let mut sorted = ratios.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    let median = if sorted.len() % 2 == 0 {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    };
    let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}x")).collect();
    format!("{}, median {median:.2}x", each.join(" "))
}
