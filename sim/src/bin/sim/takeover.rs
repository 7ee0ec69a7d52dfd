//! `sim takeover`: how long after a fault on the lease holder another
//! replica is granted the lease, as a distribution over many runs in the
//! simulator and against PostgreSQL, beside the formula's bound.

use crate::output::say;
use retention_sim::Sim;
use retention_sim::real::RealServer;
use retention_sim::real::run::run_plan;
use retention_sim::report::{Story, Takeover, bound_ms, spread, story_plan, takeover};

use crate::args::TakeoverArgs;

/// How far apart the two medians (and the two 90th percentiles) may be
/// before the model is called wrong about takeover.
const TOLERANCE_MS: u64 = 500;

/// PostgreSQL runs in flight at once.
const REAL_AT_ONCE: usize = 5;

/// What one side measured for one story.
#[derive(Default)]
struct Side {
    runs: u64,
    /// Runs whose fault struck replica 1 while it held the lease.
    measured: u64,
    /// Of those, runs whose fault struck during a delete.
    in_delete: u64,
    /// Of those, runs with no new term within the run.
    no_takeover: u64,
    /// Of those, runs whose new term went to replica 1 again.
    same_holder: u64,
    samples_ms: Vec<u64>,
}

impl Side {
    fn add(&mut self, seen: Takeover) {
        self.runs += 1;
        if !seen.holder_at_fault {
            return;
        }
        self.measured += 1;
        self.in_delete += u64::from(seen.in_delete);
        self.same_holder += u64::from(seen.same_holder && seen.after_ms.is_some());
        match seen.after_ms {
            Some(after_ms) => self.samples_ms.push(after_ms),
            None => self.no_takeover += 1,
        }
    }

    fn cell(&self) -> String {
        match spread(&self.samples_ms) {
            Some([min, median, p90, max]) => format!(
                "{min} / {median} / {p90} / {max} ({} of {} runs{}{}{})",
                self.samples_ms.len(),
                self.runs,
                if self.in_delete > 0 {
                    format!(", {} struck in a delete", self.in_delete)
                } else {
                    String::new()
                },
                if self.same_holder > 0 {
                    format!(", {} retaken by replica 1", self.same_holder)
                } else {
                    String::new()
                },
                if self.no_takeover > 0 {
                    format!(", {} NEVER taken over", self.no_takeover)
                } else {
                    String::new()
                }
            ),
            None if self.runs == 0 => "not run".to_owned(),
            None => format!("no takeover measured ({} runs)", self.runs),
        }
    }
}

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
                    crate::files::may_write(&history_file(dir, *story, k), false)
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
        let mut simulated = Side::default();
        let mut measured = Side::default();
        let bound = bound_ms(&story_plan(story, args.start).0);
        for k in 0..args.runs {
            let (spec, at_ms) = story_plan(story, args.start + k);
            let history = Sim::new(&spec).run().map_err(|error| error.to_string())?;
            simulated.add(takeover(&history, at_ms));
        }
        if let Some(server) = &real {
            let runs: Vec<u64> = (0..args.real_runs).collect();
            for batch in runs.chunks(REAL_AT_ONCE) {
                // Each on a database of its own; they spend their time
                // waiting, so a few at once barely touch each other's timing.
                let plans: Vec<_> = (batch.iter())
                    .map(|&k| (k, story_plan(story, args.start + k)))
                    .collect();
                let finished = server.block_on(futures_util::future::join_all(plans.iter().map(
                    |(k, (spec, _))| {
                        let name = format!("takeover_{}_{k}", story.name().replace('-', "_"));
                        async move { run_plan(server.server(), spec, &name).await }
                    },
                )));
                for ((k, (_, at_ms)), run) in plans.iter().zip(finished) {
                    if let Some(dir) = &args.out {
                        let path = history_file(dir, story, *k);
                        crate::files::write_checked(&path, &run.history.to_jsonl(), false, |_| {
                            Ok(())
                        })
                        .map_err(|problem| format!("--out {problem}"))?;
                    }
                    measured.add(takeover(&run.history, *at_ms));
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
