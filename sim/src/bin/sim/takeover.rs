//! `sim takeover`: how long after a fault on the lease holder another
//! replica is granted the lease, as a distribution over many runs in the
//! simulator and against PostgreSQL, beside the formula's bound.

use crate::commands::jsonl_naming_plan;
use crate::output::say;
use retention_sim::Sim;
use retention_sim::real::{RealServer, takeover_batch};
use retention_sim::report::{Story, TakeoverTally, bound_ms, spread, story_plan, takeover};

use crate::args::TakeoverArgs;

/// How far apart the two medians (and the two 90th percentiles) may be
/// before the model is called wrong about takeover.
const TOLERANCE_MS: u64 = 500;

/// PostgreSQL runs in flight at once.
const REAL_AT_ONCE: usize = 5;

/// The most PostgreSQL runs a story takes: about 33 hours of them.
const REAL_RUNS_MAX: u64 = 10_000;

pub fn run_takeover(args: &TakeoverArgs) -> Result<bool, String> {
    if !(1..=100_000).contains(&args.runs) {
        return Err(format!("--runs: {} is not in 1..=100000", args.runs));
    }
    if args.real_runs > 1_000 {
        return Err(format!(
            "--real-runs: {} is not in 0..=1000",
            args.real_runs
        ));
    }
    let runs_max = args.runs.max(args.real_runs);
    if args.start.checked_add(runs_max - 1).is_none() {
        return Err(format!(
            "--start {}: with {runs_max} runs the seeds would pass 2^64 - 1",
            args.start
        ));
    }
    let mut stories: Vec<Story> = Vec::new();
    for name in &args.story {
        let story = Story::named(name).expect("clap checked the name");
        if stories.contains(&story) {
            return Err(format!("--story {name}: given twice"));
        }
        stories.push(story);
    }
    if stories.is_empty() {
        stories = Story::ALL.to_vec();
    }
    // About 12 s each: past this a run would outlast any machine, and the
    // check below names every file.
    if args.real_runs > REAL_RUNS_MAX {
        return Err(format!(
            "--real-runs {}: at most {REAL_RUNS_MAX} (each takes about 12 s)",
            args.real_runs
        ));
    }
    // Checked before hours of runs, not at the first history saved.
    match (&args.out, args.real_runs) {
        (Some(dir), 0) => {
            return Err(format!(
                "--out {}: only PostgreSQL runs are saved, and --real-runs is 0",
                dir.display()
            ));
        }
        (Some(dir), _) if !dir.is_dir() => {
            return Err(format!("--out {}: name an existing folder", dir.display()));
        }
        (Some(dir), real_runs) => {
            for story in &stories {
                for k in 0..real_runs {
                    crate::files::may_write(&history_file(dir, *story, k), args.force)
                        .map_err(|problem| format!("--out {problem}"))?;
                }
            }
        }
        _ => {}
    }
    let real = if args.real_runs > 0 {
        Some(RealServer::start_installed()?)
    } else {
        None
    };
    say!(
        "takeover time: ms from the fault on the holder (replica 1) until a new term is \
         granted, min / median / p90 / max; tolerance {TOLERANCE_MS} ms on the median and p90"
    );
    let mut agree = true;
    for story in stories {
        let mut simulated = TakeoverTally::default();
        let mut measured = TakeoverTally::default();
        let bound = bound_ms(&story_plan(story, args.start).0);
        for k in 0..args.runs {
            let (spec, at_ms) = story_plan(story, args.start + k);
            let history = Sim::new(&spec).run().map_err(|error| error.to_string())?;
            simulated.add(takeover(&history, at_ms));
        }
        if let Some(server) = &real {
            let runs: Vec<u64> = (0..args.real_runs).collect();
            for batch in runs.chunks(REAL_AT_ONCE) {
                for (k, at_ms, run) in takeover_batch(server, story, args.start, batch) {
                    if let Some(dir) = &args.out {
                        let path = history_file(dir, story, k);
                        let spec = story_plan(story, args.start + k).0;
                        let text = jsonl_naming_plan(&run.history, &spec);
                        crate::files::write_checked(&path, &text, args.force, |_| Ok(()))
                            .map_err(|problem| format!("--out {problem}"))?;
                    }
                    measured.add(takeover(&run.history, at_ms));
                }
            }
        }
        say!("{} (bound {bound} ms):", story.name());
        say!("  simulated:  {}", simulated.cell());
        say!("  PostgreSQL: {}", measured.cell());
        let over: Vec<u64> = (simulated.samples_ms.iter())
            .chain(&measured.samples_ms)
            .copied()
            .filter(|&ms| ms > bound)
            .collect();
        if !over.is_empty() || simulated.no_takeover + measured.no_takeover > 0 {
            agree = false;
            say!("  OVER THE BOUND: {over:?}");
        }
        if let (Some(sim), Some(pg)) = (spread(&simulated.samples_ms), spread(&measured.samples_ms))
        {
            let (median, p90) = (sim[1].abs_diff(pg[1]), sim[2].abs_diff(pg[2]));
            let verdict = if median.max(p90) <= TOLERANCE_MS {
                "agree"
            } else {
                agree = false;
                "DISAGREE"
            };
            say!("  {verdict}: medians {median} ms apart, p90s {p90} ms apart");
        }
    }
    Ok(agree)
}

/// Where `--out DIR` keeps story `story`'s PostgreSQL run `k`.
fn history_file(dir: &std::path::Path, story: Story, k: u64) -> std::path::PathBuf {
    dir.join(format!("{}-{k}.jsonl", story.name()))
}
