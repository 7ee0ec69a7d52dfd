//! `sim`: run, sweep and replay simulations of the retention worker.
//!
//! Exit status: 0 when every run kept the contract, 1 when any violated it,
//! 2 for bad input.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use retention_sim::{
    BenchConfig, Expect, ExploreConfig, FaultEvent, Flaw, History, OpKind, RunSpec, Scenario,
    bench, check, excerpt, explore, format_failure, parse_token, peak_rss_mb, replay_command, run,
    scenario_report, swarm,
};

#[derive(Parser)]
#[command(
    name = "sim",
    about = "Deterministic simulation of the lease-fenced retention worker"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One run: prints its timeline and the verdict.
    Run(RunArgs),
    /// A sweep over many seeds: prints a summary.
    Explore(ExploreArgs),
    /// Runs a replay token printed by a failure and prints its timeline.
    Replay {
        /// The token (the JSON after `replay` in a failure message).
        token: String,
        /// Also save the run as a scenario file (its name is the file name).
        #[arg(long, value_name = "scenarios/NAME.toml")]
        save: Option<std::path::PathBuf>,
    },
    /// Measures the harness: speed, overhead, seeds to find each flaw, memory.
    Bench(BenchArgs),
    /// Checks a recorded history (JSON lines, as `run --jsonl` or the
    /// real-mode tests write it) and prints the verdict.
    Check {
        /// The history file.
        history: std::path::PathBuf,
        /// Also print the whole timeline.
        #[arg(long)]
        timeline: bool,
    },
    /// Runs scenario files and checks each one's expected outcome.
    Scenario {
        /// The files.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Run the flawed variant instead and check `expect.flaws` for it.
        #[arg(long, value_parser = parse_flaw)]
        flaw: Option<Flaw>,
    },
}

#[derive(Args)]
struct RunArgs {
    /// The seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Replicas, 1-5.
    #[arg(long)]
    replicas: Option<u32>,
    /// Draw faults from the seed (swarm mode); `--fault` and events still apply.
    #[arg(long)]
    swarm: bool,
    /// Simulated run length.
    #[arg(long)]
    duration_ms: Option<u64>,
    /// A fault knob, NAME=VALUE; names: latency_ms_max, renew_reply_delay_permille,
    /// reject_permille, ambiguous_permille, null_renew_permille, packet_loss_permille,
    /// clock_skew_ms_max.
    #[arg(long = "fault", value_name = "NAME=VALUE")]
    faults: Vec<String>,
    /// Pause REPLICA at AT_MS for FOR_MS: `REPLICA:AT_MS:FOR_MS`.
    #[arg(long, value_name = "R:AT:FOR")]
    pause: Vec<String>,
    /// Crash REPLICA at AT_MS, restart after MS: `REPLICA:AT_MS:RESTART_MS`.
    #[arg(long, value_name = "R:AT:RESTART")]
    crash: Vec<String>,
    /// Stop REPLICA at AT_MS with CALLERS concurrent calls: `REPLICA:AT_MS[:CALLERS]`.
    #[arg(long, value_name = "R:AT[:CALLERS]")]
    stop: Vec<String>,
    /// Stop REPLICA when it issues its NTH call of OP: `REPLICA:OP:NTH[:CALLERS]`.
    #[arg(long, value_name = "R:OP:NTH[:CALLERS]")]
    stop_during: Vec<String>,
    /// Also write the history as JSON lines to this file.
    #[arg(long)]
    jsonl: Option<std::path::PathBuf>,
    /// Run the flawed variant: overlapping-renewals, stale-release,
    /// moving-cutoff, uncapped-term or flag-only-stop.
    #[arg(long, value_parser = parse_flaw)]
    flaw: Option<Flaw>,
}

#[derive(Args)]
struct ExploreArgs {
    /// How many seeds to run.
    #[arg(long, default_value_t = 1_000)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Threads.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Draw each run's faults from its seed.
    #[arg(long)]
    swarm: bool,
    /// Fix the replica count.
    #[arg(long)]
    replicas: Option<u32>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
    /// Run the flawed variant: overlapping-renewals, stale-release,
    /// moving-cutoff, uncapped-term or flag-only-stop.
    #[arg(long, value_parser = parse_flaw)]
    flaw: Option<Flaw>,
    /// Run only shard I of N (1-based) of the seed range, so that N
    /// machines split one sweep: seeds whose index is I-1 modulo N.
    #[arg(long, value_name = "I/N", value_parser = parse_shard, default_value = "1/1")]
    shard: (u64, u64),
}

fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is not I/N"))?;
    let number = |part: &str| {
        part.parse::<u64>()
            .map_err(|_| format!("{text:?}: {part:?} is not a number"))
    };
    let (i, n) = (number(i)?, number(n)?);
    if n == 0 || !(1..=n).contains(&i) {
        return Err(format!("{text:?}: need 1 <= I <= N"));
    }
    Ok((i, n))
}

#[derive(Args)]
struct BenchArgs {
    /// Print the figures as one JSON object.
    #[arg(long)]
    json: bool,
    /// Rounds of the speed measurement.
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// Runs per round and mode.
    #[arg(long, default_value_t = 200)]
    runs_per_round: u64,
    /// Independent seed streams per flaw and mode.
    #[arg(long, default_value_t = 20)]
    streams: u64,
    /// Runs of the memory sweep.
    #[arg(long, default_value_t = 100_000)]
    memory_runs: u64,
}

fn parse_flaw(name: &str) -> Result<Flaw, String> {
    Flaw::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Flaw::ALL.iter().map(|flaw| flaw.name()).collect();
        format!("unknown flaw {name:?}; known: {}", known.join(", "))
    })
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Run(args) => {
            build_spec(&args).and_then(|spec| run_one(&spec, args.jsonl.as_deref()))
        }
        Command::Replay { token, save } => parse_token(&token).and_then(|spec| {
            if let Some(path) = save {
                save_scenario(&spec, &path)?;
            }
            run_one(&spec, None)
        }),
        Command::Scenario { files, flaw } => run_scenarios(&files, flaw),
        Command::Explore(args) => run_explore(&args),
        Command::Bench(args) => run_bench(&args),
        Command::Check { history, timeline } => check_file(&history, timeline),
    };
    match result {
        Ok(passed) => ExitCode::from(if passed { 0 } else { 1 }),
        Err(message) => {
            eprintln!("sim: {message}");
            ExitCode::from(2)
        }
    }
}

fn run_one(spec: &RunSpec, jsonl: Option<&std::path::Path>) -> Result<bool, String> {
    let history = run(spec).map_err(|error| error.to_string())?;
    if let Some(path) = jsonl {
        std::fs::write(path, history.to_jsonl())
            .map_err(|error| format!("{}: {error}", path.display()))?;
    }
    let verdict = check(&history);
    println!("{}", history.timeline());
    println!("verdict for seed {}:\n{}", spec.seed, verdict.summary());
    if verdict.passed() {
        println!("0 violations\nreplay: {}", replay_command(spec));
    } else {
        println!("{}", format_failure(spec, &history, &verdict));
    }
    Ok(verdict.passed())
}

fn check_file(path: &std::path::Path, timeline: bool) -> Result<bool, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let history = History::from_jsonl(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let verdict = check(&history);
    if timeline {
        println!("{}", history.timeline());
    }
    println!(
        "verdict for {} (seed {}, {} events):\n{}",
        path.display(),
        verdict.seed,
        history.events.len(),
        verdict.summary()
    );
    for violation in &verdict.violations {
        println!("{violation}\n{}", excerpt(&history, &violation.events));
    }
    println!("{} violations", verdict.violations.len());
    Ok(verdict.passed())
}

fn build_spec(args: &RunArgs) -> Result<RunSpec, String> {
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
    spec.flaw = args.flaw;
    for fault in &args.faults {
        set_fault(&mut spec, fault)?;
    }
    for text in &args.pause {
        let [replica, at_ms, for_ms] = numbers::<3>("--pause", text)?;
        spec.events.push(FaultEvent::Pause {
            replica: small(replica)?,
            at_ms,
            for_ms,
        });
    }
    for text in &args.crash {
        let [replica, at_ms, restart_after_ms] = numbers::<3>("--crash", text)?;
        spec.events.push(FaultEvent::Crash {
            replica: small(replica)?,
            at_ms,
            restart_after_ms,
        });
    }
    for text in &args.stop {
        let with_callers = if text.matches(':').count() == 1 {
            format!("{text}:1")
        } else {
            text.clone()
        };
        let [replica, at_ms, callers] = numbers::<3>("--stop", &with_callers)?;
        spec.events.push(FaultEvent::Stop {
            replica: small(replica)?,
            at_ms,
            callers: small(callers)?,
        });
    }
    for text in &args.stop_during {
        spec.events.push(parse_stop_during(text)?);
    }
    spec.validate().map_err(|error| error.to_string())?;
    Ok(spec)
}

fn set_fault(spec: &mut RunSpec, text: &str) -> Result<(), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("--fault {text:?}: expected NAME=VALUE"))?;
    let value: u64 = value
        .parse()
        .map_err(|_| format!("--fault {name}: {value:?} is not a non-negative integer"))?;
    let f = &mut spec.faults;
    match name {
        "latency_ms_max" => f.latency_ms_max = value,
        "clock_skew_ms_max" => f.clock_skew_ms_max = value,
        "renew_reply_delay_permille" => f.renew_reply_delay_permille = small(value)?,
        "reject_permille" => f.reject_permille = small(value)?,
        "ambiguous_permille" => f.ambiguous_permille = small(value)?,
        "null_renew_permille" => f.null_renew_permille = small(value)?,
        "packet_loss_permille" => f.packet_loss_permille = small(value)?,
        other => {
            return Err(format!(
                "--fault: unknown fault {other:?}; known: latency_ms_max, renew_reply_delay_permille, reject_permille, ambiguous_permille, null_renew_permille, packet_loss_permille, clock_skew_ms_max"
            ));
        }
    }
    Ok(())
}

fn parse_stop_during(text: &str) -> Result<FaultEvent, String> {
    let parts: Vec<&str> = text.split(':').collect();
    if !(3..=4).contains(&parts.len()) {
        return Err(format!(
            "--stop-during {text:?}: expected REPLICA:OP:NTH[:CALLERS]"
        ));
    }
    let op = match parts[1] {
        "acquire" => OpKind::Acquire,
        "renew" => OpKind::Renew,
        "release" => OpKind::Release,
        "delete" => OpKind::Delete,
        other => {
            return Err(format!(
                "--stop-during: unknown operation {other:?} (acquire, renew, release, delete)"
            ));
        }
    };
    let number = |index: usize, default: u64| -> Result<u32, String> {
        let Some(raw) = parts.get(index) else {
            return small(default);
        };
        small(
            raw.parse()
                .map_err(|_| format!("--stop-during {text:?}: {raw:?} is not a number"))?,
        )
    };
    Ok(FaultEvent::StopDuring {
        replica: number(0, 0)?,
        op,
        nth: number(2, 1)?,
        callers: number(3, 1)?,
    })
}

fn numbers<const N: usize>(flag: &str, text: &str) -> Result<[u64; N], String> {
    let values: Vec<u64> = text
        .split(':')
        .map(|part| {
            part.parse()
                .map_err(|_| format!("{flag} {text:?}: {part:?} is not a non-negative integer"))
        })
        .collect::<Result<_, _>>()?;
    values
        .try_into()
        .map_err(|_| format!("{flag} {text:?}: expected {N} numbers separated by ':'"))
}

fn small(value: u64) -> Result<u32, String> {
    u32::try_from(value).map_err(|_| format!("{value} is too large"))
}

fn run_explore(args: &ExploreArgs) -> Result<bool, String> {
    if args.seeds == 0 {
        return Err("--seeds must be at least 1".into());
    }
    if let Some(replicas) = args.replicas
        && !(1..=5).contains(&replicas)
    {
        return Err(format!("--replicas: {replicas} is not in 1..=5"));
    }
    let config = ExploreConfig {
        seeds: args.seeds,
        start: args.start,
        jobs: args.jobs,
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
    if args.json {
        let json = serde_json::json!({
            "runs": summary.runs,
            "failed_runs": summary.failed_runs,
            "violations": summary.violations,
            "violations_by_clause": summary.violations_by_clause,
            "runs_per_sec": summary.runs_per_sec(),
            "sim_to_wall_ratio": summary.sim_to_wall_ratio(),
            "first_failure": summary.first_failure.as_ref().map(|(_, command)| command),
            "peak_rss_mb": peak_rss_mb(),
        });
        println!("{json}");
    } else {
        println!(
            "{} runs, {} failed, {} violations; {:.0} runs/s, simulated/wall time {:.0}x",
            summary.runs,
            summary.failed_runs,
            summary.violations,
            summary.runs_per_sec(),
            summary.sim_to_wall_ratio()
        );
        for (clause, count) in &summary.violations_by_clause {
            println!("  {clause}: {count}");
        }
        if let Some((spec, _)) = &summary.first_failure {
            let history = run(spec).map_err(|error| error.to_string())?;
            println!(
                "\nfirst failure:\n{}",
                format_failure(spec, &history, &check(&history))
            );
        }
        if let Some(mb) = peak_rss_mb() {
            println!("peak memory {mb:.1} MiB");
        }
    }
    Ok(summary.failed_runs == 0)
}

fn run_scenarios(files: &[std::path::PathBuf], flaw: Option<Flaw>) -> Result<bool, String> {
    let mut all_met = true;
    for file in files {
        let mut scenario = Scenario::load(file).map_err(|error| error.to_string())?;
        scenario.run.flaw = flaw.or(scenario.run.flaw);
        let history = run(&scenario.run).map_err(|error| error.to_string())?;
        let verdict = check(&history);
        println!("{}", scenario_report(&scenario, &history, &verdict));
        let judged = match flaw {
            Some(flaw) => scenario.judge_flawed(flaw, &verdict),
            None => scenario.judge(&verdict, &history.timeline()),
        };
        match judged {
            Ok(()) => println!("{}: as expected", file.display()),
            Err(problems) => {
                all_met = false;
                println!("{}: NOT as expected:\n{problems}", file.display());
            }
        }
    }
    Ok(all_met)
}

/// Writes `spec` as a scenario that expects what the run does now, so a
/// failure found once stays a named regression.
fn save_scenario(spec: &RunSpec, path: &std::path::Path) -> Result<(), String> {
    let name = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    let history = run(spec).map_err(|error| error.to_string())?;
    let verdict = check(&history);
    let mut violated: Vec<String> = verdict
        .violations
        .iter()
        .map(|v| v.clause.to_owned())
        .collect();
    violated.dedup();
    let Some(first) = verdict.violations.first() else {
        return Err(format!(
            "--save: seed {} keeps every clause; there is no failure to keep",
            spec.seed
        ));
    };
    let scenario = Scenario {
        name: name.to_owned(),
        description: format!(
            "Saved from a replay of seed {}. First finding: {first}",
            spec.seed
        ),
        clauses: violated.clone(),
        run: spec.clone(),
        expect: Expect {
            violates: violated,
            ..Expect::default()
        },
    };
    let comment = "Saved by `sim replay --save`: it expects what the run did when saved.\n\
                   Once the bug is fixed, empty expect.violates so the scenario must pass.";
    std::fs::write(path, scenario.to_toml(comment))
        .map_err(|error| format!("{}: {error}", path.display()))?;
    Scenario::load(path).map_err(|error| format!("the saved file does not load back: {error}"))?;
    eprintln!("saved {}", path.display());
    Ok(())
}

fn run_bench(args: &BenchArgs) -> Result<bool, String> {
    if args.rounds == 0 || args.runs_per_round == 0 || args.streams == 0 || args.memory_runs < 1_000
    {
        return Err("bench: rounds, runs per round and streams must be at least 1, memory runs at least 1000".into());
    }
    let config = BenchConfig {
        rounds: args.rounds,
        runs_per_round: args.runs_per_round,
        streams: args.streams,
        memory_runs: args.memory_runs,
        ..BenchConfig::default()
    };
    let report = bench(&config, |stage| eprintln!("bench: {stage}..."));
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&report).map_err(|error| error.to_string())?
        );
        return Ok(true);
    }
    println!("standard scenario: 3 replicas, 5,000-row backlog, swarm faults; one thread");
    println!(
        "  runs/s checked {:.0}, bare {:.0}; overhead {:.2}x",
        report.runs_per_sec_checked, report.runs_per_sec_bare, report.overhead_ratio
    );
    println!("  simulated/wall time {:.0}x", report.sim_to_wall_ratio);
    println!(
        "  peak memory {:.1} MiB after 1,000 runs, {:.1} MiB after {}",
        report.rss_mb_after_1k, report.rss_mb_after_100k, report.memory_runs
    );
    println!(
        "seeds to first detection over {} streams (median / max, streams that missed):",
        config.streams
    );
    for (flaw, figures) in &report.flaws {
        let (r, s) = (figures.random, figures.swarm);
        println!(
            "  {flaw:<22} random {:>3} / {:>3} ({} missed)   swarm {:>3} / {:>3} ({} missed)",
            r.median, r.max, r.misses, s.median, s.max, s.misses
        );
    }
    Ok(true)
}
