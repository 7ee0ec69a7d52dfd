//! `sim bench --guided`: the canaries' detection table and the coverage
//! comparison, swarm against guided, as text or JSON.

use retention_sim::search::{GuidedBenchConfig, Streams, bench_guided};

use crate::args::BenchArgs;
use crate::output::{say, tell};

pub fn run(args: &BenchArgs) -> Result<bool, String> {
    for (flag, value, range) in [
        ("--budget-runs", args.budget_runs, 1..=100_000_000),
        ("--coverage-runs", args.coverage_runs, 0..=100_000_000),
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
    let Some((s, g)) = &report.coverage else {
        return Ok(true);
    };
    say!(
        "coverage at equal CPU time: swarm {} runs in {:.1} s, guided {} runs in {:.1} s",
        s.runs,
        s.cpu_secs,
        g.runs,
        g.cpu_secs
    );
    say!(
        "  distinct abstract states: swarm {}, guided {} ({:.2}x); per 10,000 runs {:.0} and {:.0}",
        s.states,
        g.states,
        g.states as f64 / s.states.max(1) as f64,
        s.states as f64 * 10_000.0 / s.runs.max(1) as f64,
        g.states as f64 * 10_000.0 / g.runs.max(1) as f64
    );
    say!(
        "  {:<42} {:>22} {:>22} {:>8}",
        "probe: runs reaching it",
        "swarm (per 10,000)",
        "guided (per 10,000)",
        "ratio"
    );
    let per_10k = |count: u64, runs: u64| count as f64 * 10_000.0 / runs.max(1) as f64;
    let mut rows: Vec<(&str, u64, u64)> = s
        .probe_runs
        .iter()
        .map(|(probe, &count)| (*probe, count, g.probe_runs.get(probe).copied().unwrap_or(0)))
        .collect();
    rows.sort_by_key(|&(probe, swarm, _)| (swarm, probe));
    for (probe, swarm, guided) in rows {
        say!(
            "  {probe:<42} {:>22} {:>22} {:>7.1}x",
            format!("{swarm} ({:.1})", per_10k(swarm, s.runs)),
            format!("{guided} ({:.1})", per_10k(guided, g.runs)),
            guided as f64 / swarm.max(1) as f64
        );
    }
    Ok(true)
}
