//! The command line's arguments, and the run spec that `sim run` builds
//! from them.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use retention_sim::RunSpec;
use retention_sim::model::{FaultKnob, Flaw, Named, set_fault_flag};

use crate::event_flags::EventFlagTexts;
use retention_sim::search::{Shard, swarm};
use retention_sim::sweep::DEFAULT_SHRINK_MAX;

#[derive(Parser)]
#[command(
    name = "sim",
    version,
    about = "Deterministic simulation of the lease-fenced retention worker"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Colour violations and unreached probes: `auto` on a terminal
    /// without `NO_COLOR`, `always`, or `never`.
    #[arg(long, global = true, value_enum, default_value_t = Colour::Auto)]
    pub color: Colour,
}

/// When output is coloured (cargo's and ripgrep's convention).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Colour {
    /// On a terminal, unless `NO_COLOR` is set (not empty) or `TERM` is `dumb`.
    Auto,
    /// Always, even into a file or a pipe.
    Always,
    /// Never.
    Never,
}

#[derive(Subcommand)]
pub enum Command {
    /// One run: prints its timeline and the verdict.
    Run(Box<RunArgs>),
    /// A sweep over many seeds: prints a summary.
    Explore(ExploreArgs),
    /// Combines shard summaries into the summary of the whole sweep, and
    /// with `--baseline` sorts its failures into new, still failing, fixed.
    Merge(MergeArgs),
    /// Runs a replay token printed by a failure and prints its timeline.
    Replay {
        /// The token (the JSON after `replay` in a failure message).
        token: String,
        /// Also save the run as a scenario file (its name is the file name).
        #[arg(long, value_name = "scenarios/NAME.toml")]
        save: Option<std::path::PathBuf>,
        /// Also draw the run as an SVG swimlane picture in this file (with
        /// `--at`, the instant marked across the lanes).
        #[arg(long, value_name = "FILE.svg")]
        svg: Option<std::path::PathBuf>,
        /// Also write the history as JSON lines to this file, its plan named
        /// in its header (`sim explain FILE` starts from it).
        #[arg(long, conflicts_with_all = [
            "real", "at", "at_seq", "delay_reply", "drop_reply", "drop_fault", "move_fault", "set",
        ])]
        jsonl: Option<std::path::PathBuf>,
        /// Replace the `--save`, `--svg` or `--jsonl` file if it exists (with
        /// `--real`, the attempts in `--out`).
        #[arg(long)]
        force: bool,
        /// Run the plan against a throwaway PostgreSQL with the production
        /// worker and adapters, on real time, and judge it the same way.
        #[arg(long, conflicts_with_all = ["save", "svg"])]
        real: bool,
        /// With `--real`: attempts before "not reproduced".
        #[arg(long, default_value_t = 3, requires = "real")]
        attempts: u32,
        /// With `--real`: the folder for each attempt's history and picture
        /// [default: a new folder here, `real-replay`, else `real-replay-2`,
        /// `-3`, ..., named in the output].
        #[arg(long, value_name = "DIR", requires = "real")]
        out: Option<std::path::PathBuf>,
        /// What if: the reply of the timeline's call CALL arrives MS
        /// later. With any what-if flag, the run is replayed as recorded and
        /// with the changes, and the two compared (repeatable).
        #[arg(long, value_name = "CALL:MS", conflicts_with_all = ["real", "save", "svg"])]
        delay_reply: Vec<String>,
        /// What if: the timeline's call CALL is applied and its reply lost.
        #[arg(long, value_name = "CALL", conflicts_with_all = ["real", "save", "svg"])]
        drop_reply: Vec<String>,
        /// What if: the token's `events[N]` (from 0) dropped: its time
        /// comes and it does nothing, so the run is the recorded one up to
        /// that instant.
        #[arg(long, value_name = "N", conflicts_with_all = ["real", "save", "svg"])]
        drop_fault: Vec<String>,
        /// What if: the token's timed `events[N]` happens at MS instead
        /// (the run is the recorded one up to the earlier instant).
        #[arg(long, value_name = "N:MS", conflicts_with_all = ["real", "save", "svg"])]
        move_fault: Vec<String>,
        /// What if: one field of the token set to a JSON value
        /// (`worker.lease_ttl_ms=3000`, `faults.reject_permille=0`).
        #[arg(long, value_name = "PATH=VALUE", conflicts_with_all = ["real", "save", "svg"])]
        set: Vec<String>,
        /// The world at this instant instead of the timeline: the database
        /// as it stood (lease row, its lock and queue, open transactions
        /// and statements, records by age), read inside the run, and each
        /// replica as the history shows it (term, process, clock, lease
        /// and token, calls in flight).
        #[arg(long, value_name = "MS", conflicts_with_all = ["real", "save", "at_seq", "delay_reply", "drop_reply", "drop_fault", "move_fault", "set"])]
        at: Option<i64>,
        /// Like `--at`, just after the timeline's event N (its `seq`).
        #[arg(long, value_name = "N", conflicts_with_all = ["real", "save", "delay_reply", "drop_reply", "drop_fault", "move_fault", "set"])]
        at_seq: Option<usize>,
        /// With `--at` or `--at-seq`: the world as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Shrinks a failing replay token: drops events, turns faults off,
    /// moves settings to their defaults, removes replicas, shortens the run
    /// and tries nearby seeds while the same clause is still violated;
    /// prints the smallest (its token may name another seed).
    Shrink {
        /// The token (the JSON after `replay` in a failure message).
        token: String,
        /// Runs the shrink may spend.
        #[arg(long, default_value_t = retention_sim::search::SHRINK_RUNS)]
        budget: usize,
    },
    /// Explains a failing run: branches it at instants over its length,
    /// each branch keeping the run up to there and drawing a fresh future,
    /// and shows where the chance of the same violation rises most (where
    /// the failure became inevitable), the events and the world there.
    Explain(ExplainArgs),
    /// Measures the harness: speed, overhead, seeds to find each flaw, memory.
    Bench(BenchArgs),
    /// Measures takeover time (from a fault on the lease holder until
    /// another replica is granted) in the simulator and against a
    /// throwaway PostgreSQL, beside the bound worker/README.md's formula gives.
    Takeover(TakeoverArgs),
    /// Checks a recorded history (JSON lines, as `run --jsonl` or the
    /// real-mode tests write it) and prints the verdict.
    Check {
        /// The history file.
        history: std::path::PathBuf,
        /// Also print the whole timeline.
        #[arg(long)]
        timeline: bool,
        /// Judge a history without its final event (cut off): the clauses
        /// that need the run's end (LIVE-1, LIVE-2, REL-3) are not judged.
        #[arg(long)]
        partial: bool,
        /// Print every violation (default: the first 10 of each clause).
        #[arg(long)]
        all: bool,
        /// Also draw the history as an SVG swimlane picture in this file.
        #[arg(long, value_name = "FILE.svg")]
        svg: Option<std::path::PathBuf>,
        /// Replace the `--svg` file if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Runs scenario files and checks each one's expected outcome.
    Scenario {
        /// The files.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Run the flawed variant instead and check `expect.flaws` for it.
        #[arg(long, value_parser = named::<Flaw>())]
        flaw: Option<Flaw>,
        /// Also draw each run as an SVG swimlane picture: this file for one
        /// scenario, `DIR/NAME.svg` for several (DIR must exist).
        #[arg(long, value_name = "FILE.svg|DIR")]
        svg: Option<std::path::PathBuf>,
        /// Replace `--svg` files that exist.
        #[arg(long)]
        force: bool,
        /// Run each scenario against a throwaway PostgreSQL too, and report
        /// whether the real run kept the simulated verdict and showed what
        /// `expect.shows` lists.
        #[arg(long, conflicts_with_all = ["flaw", "svg"])]
        real: bool,
        /// With `--real`: also write the results as a Markdown table, a row
        /// per scenario (its verdict in the simulator and against
        /// PostgreSQL, and each `expect.shows` text the real run missed).
        #[arg(long, value_name = "FILE.md", requires = "real")]
        table: Option<std::path::PathBuf>,
        /// With `--real`: also save each real run's history as
        /// `DIR/NAME.jsonl` (DIR must exist; `--force` replaces files).
        #[arg(long, value_name = "DIR", requires = "real")]
        out: Option<std::path::PathBuf>,
        /// Print only each file's outcome and the tally, not each run's
        /// report.
        #[arg(long, short = 'q')]
        quiet: bool,
    },
}

#[derive(Args)]
pub struct RunArgs {
    /// The seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Replicas, 1-5.
    #[arg(long)]
    pub replicas: Option<u32>,
    /// Draw faults from the seed (swarm mode); `--fault` and events still apply.
    #[arg(long)]
    pub swarm: bool,
    /// Simulated run length.
    #[arg(long)]
    pub duration_ms: Option<u64>,
    /// A fault knob, NAME=VALUE (`--help` lists the names).
    #[arg(long = "fault", value_name = "NAME=VALUE", long_help = fault_help())]
    pub faults: Vec<String>,
    /// One flag per kind of fault event (`--pause R:AT:FOR`, ...), from
    /// the library's list.
    #[command(flatten)]
    pub events: EventFlagTexts,
    /// Each commit that wrote something takes MIN..=MAX ms to be durable
    /// (flush and synchronous standby): `MIN:MAX` (default 0:0).
    #[arg(long, value_name = "MIN:MAX")]
    pub db_commit_ms: Option<String>,
    /// Also write the history as JSON lines to this file.
    #[arg(long)]
    pub jsonl: Option<std::path::PathBuf>,
    /// Also draw the run as an SVG swimlane picture in this file.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<std::path::PathBuf>,
    /// Replace the `--jsonl` or `--svg` file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Run the flawed variant with this review finding.
    #[arg(long, value_parser = named::<Flaw>())]
    pub flaw: Option<Flaw>,
}

/// What `sim explain` explains, and how thoroughly.
#[derive(Args)]
pub struct ExplainArgs {
    /// A replay token, a scenario file (`scenarios/NAME.toml`), or a history
    /// saved by `sim run --jsonl` or `sim replay --jsonl` (it names its plan).
    pub input: String,
    /// Instants on the first, even grid over the run.
    #[arg(long, default_value_t = 24)]
    pub points: usize,
    /// Fresh futures drawn at each instant.
    #[arg(long, default_value_t = 100)]
    pub branches: usize,
    /// Instants tried inside the steepest interval, each of up to four
    /// refinements (0: no refinement).
    #[arg(long, default_value_t = 8)]
    pub refine_points: usize,
    /// Threads.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Seeds the branches, so an explanation repeats.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The explanation as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Run the flawed variant with this review finding (a scenario file
    /// runs the real worker otherwise).
    #[arg(long, value_parser = named::<Flaw>())]
    pub flaw: Option<Flaw>,
    /// Also draw the run with the chance curve as a band under its lanes,
    /// the jump outlined, in this file.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<std::path::PathBuf>,
    /// Replace the `--svg` file if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args)]
pub struct ExploreArgs {
    /// How many seeds to run.
    #[arg(long, default_value_t = 1_000)]
    pub seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Threads, 1-256 (no more are started than there are seeds).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Draw each run's faults from its seed.
    #[arg(long)]
    pub swarm: bool,
    /// A guided campaign instead of a sweep: each run's plan is a swarm
    /// plan or a mutation of one that reached something rare, and the
    /// campaign learns from every run (README, "Guided exploration").
    /// --seeds is the number of runs and --start the campaign's seed.
    #[arg(long)]
    pub guided: bool,
    /// With --guided: start from the plans saved in DIR (every *.corpus
    /// file, by name) and save the corpus there at the end, as
    /// DIR/START-SHARD.corpus.
    #[arg(long, value_name = "DIR", requires = "guided")]
    pub corpus: Option<std::path::PathBuf>,
    /// Fix the replica count.
    #[arg(long)]
    pub replicas: Option<u32>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Run the flawed variant with this review finding.
    #[arg(long, value_parser = named::<Flaw>())]
    pub flaw: Option<Flaw>,
    /// Run only shard I of N (1-based) of the seed range, so that N
    /// machines split one sweep: seeds whose index is I-1 modulo N.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse, default_value = "1/1")]
    pub shard: Shard,
    /// Also write a report page, DIR/index.html: the summary, the coverage
    /// table and the first failure's replay command, picture and timeline.
    #[arg(long, value_name = "DIR")]
    pub report: Option<std::path::PathBuf>,
    /// Also write the summary as a versioned JSON document (the same one
    /// `--json` prints), for `sim merge` to combine with other shards'.
    #[arg(long, value_name = "FILE.json")]
    pub summary: Option<std::path::PathBuf>,
    /// Shrink at most this many failures (the lowest seeds); the rest are
    /// listed as drawn.
    #[arg(long, default_value_t = DEFAULT_SHRINK_MAX)]
    pub shrink_max: u64,
    /// No progress display on standard error.
    #[arg(long, short)]
    pub quiet: bool,
    /// After the summary, the conditions the failing runs share: per
    /// violated clause, the probes, abstract states and sequences that at
    /// least half its failing runs reached, ranked by the chance that a
    /// run reaching one failed (replays the failing runs and up to 2,000
    /// passing ones; a swarm or plain sweep only).
    #[arg(long, conflicts_with = "json")]
    pub hints: bool,
    /// Print the commands that run this sweep as N shards, one per machine,
    /// and the `sim merge` that combines them; run nothing.
    #[arg(long, value_name = "N")]
    pub print_shard_plan: Option<u64>,
    /// Replace the report's and the summary's files if they exist.
    #[arg(long)]
    pub force: bool,
}

/// `sim merge`: shard summaries in, one summary out.
#[derive(Args)]
pub struct MergeArgs {
    /// The shards' summaries (`sim explore --summary`).
    #[arg(required = true, value_name = "SUMMARY.json")]
    pub summaries: Vec<std::path::PathBuf>,
    /// Print the merged summary as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Also write the merged summary to this file.
    #[arg(long, value_name = "FILE.json")]
    pub summary: Option<std::path::PathBuf>,
    /// Sort the failures into new, still failing and fixed against this
    /// older summary (keyed by clause and shrunk plan, not by seed); exit 1
    /// only for new ones.
    #[arg(long, value_name = "OLD.json")]
    pub baseline: Option<std::path::PathBuf>,
    /// After the summary, the conditions the failing runs share: per
    /// violated clause, the probes, abstract states and sequences that at
    /// least half its failing runs reached, ranked by the chance that a
    /// run reaching one failed (replays the failing runs and up to 2,000
    /// passing ones; a swarm or plain sweep only).
    #[arg(long, conflicts_with = "json")]
    pub hints: bool,
    /// Write each distinct shrunk failure as a scenario file in this folder
    /// (made if missing), named [FLAW-]CLAUSE-seed-SEED.toml.
    #[arg(long, value_name = "DIR")]
    pub save_failures: Option<std::path::PathBuf>,
    /// Replace files that exist.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args)]
pub struct TakeoverArgs {
    /// Simulated runs per story.
    #[arg(long, default_value_t = 200)]
    pub runs: u64,
    /// Runs against a throwaway PostgreSQL per story, each on real time
    /// (about 12 s); 0 measures the simulator only.
    #[arg(long, default_value_t = 10)]
    pub real_runs: u64,
    /// The stories to measure (default: all four).
    #[arg(long, value_parser = PossibleValuesParser::new(["frozen", "partitioned", "crashed", "clock-stepped"]))]
    pub story: Vec<String>,
    /// The first run's seed; run k has seed start + k.
    #[arg(long, default_value_t = 1)]
    pub start: u64,
    /// Also save each PostgreSQL run's history as `DIR/STORY-K.jsonl`
    /// (DIR must exist).
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Replace `--out` histories that exist.
    #[arg(long, requires = "out")]
    pub force: bool,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Print the figures as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Rounds of the speed measurement.
    #[arg(long, default_value_t = 5)]
    pub rounds: u32,
    /// Runs per round and mode.
    #[arg(long, default_value_t = 200)]
    pub runs_per_round: u64,
    /// Independent seed streams per flaw and mode.
    #[arg(long, default_value_t = 20)]
    pub streams: u64,
    /// Runs of the memory sweep.
    #[arg(long, default_value_t = 100_000)]
    pub memory_runs: u64,
    /// Instead of the simulator's figures: how often each scenario file's
    /// expectation holds against a throwaway PostgreSQL (a folder stands
    /// for its `*.toml` files), over `--attempts` single attempts each.
    #[arg(long, value_name = "FILES", num_args = 1..)]
    pub real: Vec<std::path::PathBuf>,
    /// With `--real`: single attempts per file.
    #[arg(long, default_value_t = 100, requires = "real")]
    pub attempts: u32,
    /// Instead of the simulator's figures: what guided exploration buys.
    /// Per rare-bug canary, runs and CPU seconds to first detection over
    /// --streams streams (default here 5), swarm against guided; then each
    /// probe's reach and the abstract states, at equal CPU time.
    #[arg(long, conflicts_with = "real")]
    pub guided: bool,
    /// With --guided: runs a stream may spend before it counts as found
    /// at this budget.
    #[arg(long, default_value_t = 100_000, requires = "guided")]
    pub budget_runs: u64,
    /// With --guided: swarm runs of the coverage comparison (guided gets
    /// the CPU time they took); 0 leaves it out.
    #[arg(long, default_value_t = 10_000, requires = "guided")]
    pub coverage_runs: u64,
    /// With --guided: coverage comparisons, one guided campaign seed each
    /// (0, 1, ...), each against swarm runs of its own; the report gives
    /// every seed's ratio and their median.
    #[arg(long, default_value_t = 3, requires = "guided")]
    pub coverage_seeds: u64,
    /// With --guided: measure only guided's streams (swarm's do not
    /// change when the search does).
    #[arg(long, requires = "guided")]
    pub guided_only: bool,
    /// With --guided: only this canary (repeat for more).
    #[arg(long = "canary", value_parser = named::<Flaw>(), requires = "guided")]
    pub canaries: Vec<Flaw>,
    /// With --guided: streams measured side by side.
    #[arg(long, default_value_t = 2, requires = "guided")]
    pub jobs: usize,
}

/// A parser that accepts exactly the names of `T`'s list (and lists them
/// in `--help` and in its error).
fn named<T: Named + Clone + Send + Sync>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::names()).map(|name| T::from_name(&name).expect("a listed name"))
}

fn fault_help() -> String {
    format!(
        "A fault knob, NAME=VALUE; chances are per mille (0-1000), times in ms.\nNames: {}",
        FaultKnob::names().join(", ")
    )
}

pub fn build_spec(args: &RunArgs) -> Result<RunSpec, String> {
    let mut spec = if args.swarm {
        swarm(args.seed, args.replicas)
    } else {
        RunSpec {
            seed: args.seed,
            ..RunSpec::default()
        }
    };
    if let Some(replicas) = args.replicas {
        spec.replicas = replicas;
    }
    if let Some(duration_ms) = args.duration_ms {
        spec.duration_ms = duration_ms;
    }
    if let Some(text) = &args.db_commit_ms {
        let bad = || format!("--db-commit-ms {text:?}: expected MIN:MAX in milliseconds");
        let (min, max) = text.split_once(':').ok_or_else(bad)?;
        spec.db_commit_ms_min = min.parse().map_err(|_| bad())?;
        spec.db_commit_ms_max = max.parse().map_err(|_| bad())?;
    }
    spec.flaw = args.flaw;
    let mut named = std::collections::BTreeSet::new();
    for fault in &args.faults {
        let name = fault
            .split_once('=')
            .map_or(fault.as_str(), |(name, _)| name);
        if !named.insert(name) {
            return Err(format!(
                "--fault {name}: given twice; a knob takes one value"
            ));
        }
        set_fault_flag(&mut spec.faults, fault)?;
    }
    // Events drawn by --swarm come first; then one per event flag, in the
    // order below, so an invalid event can be named by its flag.
    let drawn = spec.events.len();
    let mut flagged = Vec::new();
    for (flag, texts) in args.events.iter() {
        for text in texts {
            spec.events.push(flag.parse(text)?);
            flagged.push(format!("{} {text}", flag.flag()));
        }
    }
    spec.validate().map_err(|error| {
        let index = error
            .field
            .strip_prefix("events[")
            .and_then(|rest| rest.split(']').next())
            .and_then(|index| index.parse::<usize>().ok());
        if index.is_some_and(|index| index < drawn) {
            // Nobody typed this event: say where it came from.
            return format!(
                "{} (an event --swarm drew from seed {}): {}; change --duration-ms or \
                 --replicas to fit it, or another seed",
                error.field, spec.seed, error.problem
            );
        }
        let flag = index
            .and_then(|index| index.checked_sub(drawn))
            .and_then(|index| flagged.get(index));
        let field_flag = match error.field.as_str() {
            "replicas" => Some("--replicas".to_owned()),
            "duration_ms" => Some("--duration-ms".to_owned()),
            field if field.starts_with("faults.") => Some(format!("--fault {field}")),
            _ => None,
        };
        match (flag, field_flag) {
            (Some(flag), _) => format!("{flag}: {} ({})", error.problem, error.field),
            (None, Some(flag)) => format!("{flag}: {}", error.problem),
            (None, None) => error.to_string(),
        }
    })?;
    Ok(spec)
}
